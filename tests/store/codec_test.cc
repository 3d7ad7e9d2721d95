#include "store/mvcc/codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "store/mvcc/key_range.h"

namespace mkube::store::mvcc {
namespace {

TEST(RevisionCodec, RoundTripsAndSortsLikeTheRevisions) {
  std::vector<Revision> revs = {{1, 0}, {1, 1}, {2, 0}, {255, 7}, {256, 0}, {1LL << 40, 3}};
  for (size_t i = 0; i < revs.size(); ++i) {
    auto decoded = DecodeRevision(EncodeRevision(revs[i]));
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(*decoded, revs[i]);
    for (size_t j = 0; j < revs.size(); ++j) {
      EXPECT_EQ(revs[i] < revs[j], EncodeRevision(revs[i]) < EncodeRevision(revs[j]))
          << i << " vs " << j;
    }
  }
  EXPECT_FALSE(DecodeRevision("short").has_value());
}

TEST(KeyEntryCodec, RoundTripsKeysWithAnyBytes) {
  const std::vector<std::string> keys = {"a", std::string("a\0b", 3), std::string("\0", 1),
                                         std::string("\xff\x00\xff", 3), "/registry/pods/x"};
  for (const auto& k : keys) {
    for (int64_t rev : {1LL, 2LL, 1000000LL}) {
      auto e = DecodeKeyEntry(EncodeKeyEntry(k, rev));
      ASSERT_TRUE(e.has_value()) << k;
      EXPECT_EQ(e->user_key, k);
      EXPECT_EQ(e->main, rev);
    }
  }
  EXPECT_FALSE(DecodeKeyEntry("no terminator").has_value());
}

// Entries must sort by user key ascending (bytewise, prefixes first), then newest first.
TEST(KeyEntryCodec, OrdersByKeyThenNewestFirst) {
  std::vector<std::string> keys = {"",      "a",     std::string("a\0", 2), std::string("a\0\0", 3),
                                   "a\x01", "ab",    "b",                   std::string("b\xff", 2),
                                   "ba",    "\xff"};
  struct Entry {
    std::string key;
    int64_t rev;
  };
  std::vector<Entry> entries;
  for (const auto& k : keys) {
    for (int64_t r : {1, 9, 300}) entries.push_back({k, r});
  }
  std::mt19937 rng(7);
  std::shuffle(entries.begin(), entries.end(), rng);
  auto logical = [](const Entry& a, const Entry& b) {
    if (a.key != b.key) return a.key < b.key;
    return a.rev > b.rev;
  };
  auto encoded = [](const Entry& a, const Entry& b) {
    return EncodeKeyEntry(a.key, a.rev) < EncodeKeyEntry(b.key, b.rev);
  };
  auto by_logic = entries, by_bytes = entries;
  std::sort(by_logic.begin(), by_logic.end(), logical);
  std::sort(by_bytes.begin(), by_bytes.end(), encoded);
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(by_logic[i].key, by_bytes[i].key) << i;
    EXPECT_EQ(by_logic[i].rev, by_bytes[i].rev) << i;
  }
  // Start and end bracket exactly the entries of one key.
  for (const auto& e : entries) {
    const std::string enc = EncodeKeyEntry(e.key, e.rev);
    EXPECT_LE(KeyEntryStart(e.key), enc);
    EXPECT_LT(enc, KeyEntryEnd(e.key));
    for (const auto& other : keys) {
      if (other == e.key) continue;
      const std::string o = EncodeKeyEntry(other, 5);
      EXPECT_FALSE(KeyEntryStart(e.key) <= o && o < KeyEntryEnd(e.key)) << e.key << " " << other;
    }
  }
}

TEST(KeyRange, SemanticsOfEtcdRanges) {
  struct Case {
    const char* name;
    std::string begin, end, key;
    bool contains;
  };
  const std::vector<Case> cases = {
      {"an empty end is one key", "a", "", "a", true},
      {"an empty end excludes longer keys", "a", "", "ab", false},
      {"the end is exclusive", "a", "c", "c", false},
      {"keys inside the interval", "a", "c", "bzz", true},
      {"a \\0 end means everything from begin", "b", std::string("\0", 1), "zzz", true},
      {"a \\0 end still starts at begin", "b", std::string("\0", 1), "a", false},
      {"an end before begin is empty", "c", "a", "b", false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(KeyRange(c.begin, c.end).Contains(c.key), c.contains) << c.name;
  }
  EXPECT_TRUE(KeyRange("c", "a").empty());
  EXPECT_TRUE(KeyRange("a", "c").Overlaps(KeyRange("b", "")));
  EXPECT_FALSE(KeyRange("a", "c").Overlaps(KeyRange("c", "d")));
  EXPECT_TRUE(KeyRange("a", std::string("\0", 1)).Overlaps(KeyRange("x", "y")));
}

}  // namespace
}  // namespace mkube::store::mvcc
