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
