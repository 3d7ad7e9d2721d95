#include <gtest/gtest.h>

#include "store/mvcc/key_index.h"

namespace mkube::store::mvcc {
namespace {

IndexedVersion Put(int64_t main, int64_t sub, int64_t create, int64_t version, int64_t lease = 0) {
  return IndexedVersion{{main, sub}, create, version, lease};
}
IndexedVersion Deleted(int64_t main, int64_t sub = 0) { return IndexedVersion{{main, sub}}; }

// a: put 2, put 4, deleted 5, put 7.   b: put 3 (sub 1 of a txn with c), deleted 6.
// c: put 3 (sub 0), put 8.
KeyIndex Sample() {
  KeyIndex index;
  index.Add("a", Put(2, 0, 2, 1));
  index.Add("c", Put(3, 0, 3, 1, 9));
  index.Add("b", Put(3, 1, 3, 1));
  index.Add("a", Put(4, 0, 2, 2));
  index.Add("a", Deleted(5));
  index.Add("b", Deleted(6));
  index.Add("a", Put(7, 0, 7, 1));
  index.Add("c", Put(8, 0, 3, 2, 9));
  return index;
}

std::string Live(const KeyIndex& index, const KeyRange& range, int64_t rev) {
  std::string out;
  index.Range(range, rev, [&](const std::string& key, const IndexedVersion& v) {
    out += key + "@" + std::to_string(v.rev.main) + " ";
    return true;
  });
  return out;
}

TEST(KeyIndex, GetAnswersForEveryRevision) {
  const KeyIndex index = Sample();
  struct Case {
    std::string key;
    int64_t rev;
    int64_t want_main;  // 0: no live version
    int64_t want_version;
  } cases[] = {
      {"a", 1, 0, 0}, {"a", 2, 2, 1}, {"a", 3, 2, 1}, {"a", 4, 4, 2}, {"a", 5, 0, 0},
      {"a", 6, 0, 0}, {"a", 7, 7, 1}, {"a", 0, 7, 1}, {"a", 100, 7, 1}, {"b", 2, 0, 0},
      {"b", 3, 3, 1}, {"b", 6, 0, 0}, {"b", 0, 0, 0}, {"c", 8, 8, 2},  {"zz", 0, 0, 0},
  };
  for (const auto& c : cases) {
    auto v = index.Get(c.key, c.rev);
    if (c.want_main == 0) {
      EXPECT_FALSE(v.has_value()) << c.key << " at " << c.rev;
      continue;
    }
    ASSERT_TRUE(v.has_value()) << c.key << " at " << c.rev;
    EXPECT_EQ(v->rev.main, c.want_main) << c.key << " at " << c.rev;
    EXPECT_EQ(v->version, c.want_version) << c.key << " at " << c.rev;
  }
  EXPECT_EQ(index.Get("c", 0)->lease, 9);
  EXPECT_EQ(index.Get("c", 0)->create_revision, 3);
}

TEST(KeyIndex, RangeVisitsLiveKeysInKeyOrder) {
  const KeyIndex index = Sample();
  const std::string all("\0", 1);
  EXPECT_EQ(Live(index, KeyRange("", all), 3), "a@2 b@3 c@3 ");
  EXPECT_EQ(Live(index, KeyRange("", all), 5), "b@3 c@3 ");
  EXPECT_EQ(Live(index, KeyRange("", all), 0), "a@7 c@8 ");
  EXPECT_EQ(Live(index, KeyRange("b", "c"), 4), "b@3 ");
  EXPECT_EQ(Live(index, KeyRange("b", ""), 4), "b@3 ");
  EXPECT_EQ(Live(index, KeyRange("b", ""), 6), "");
  EXPECT_EQ(Live(index, KeyRange("c", "a"), 0), "") << "an empty interval";
  int visited = 0;
  index.Range(KeyRange("", all), 3, [&](const std::string&, const IndexedVersion&) {
    return ++visited < 2;
  });
  EXPECT_EQ(visited, 2) << "the visitor stops the scan";
}

TEST(KeyIndex, PreviousIsTheVersionJustBefore) {
  const KeyIndex index = Sample();
  EXPECT_FALSE(index.Previous("a", {2, 0}).has_value());
  EXPECT_EQ(index.Previous("a", {4, 0})->rev.main, 2);
  EXPECT_TRUE(index.Previous("a", {7, 0})->deleted());
  EXPECT_EQ(index.Previous("b", {6, 0})->rev, (Revision{3, 1}));
  EXPECT_FALSE(index.Previous("nope", {6, 0}).has_value());
}

TEST(KeyIndex, CompactionKeepsWhatReadsAtTheTargetSee) {
  struct Case {
    int64_t target;
    std::string removed;         // revisions forgotten: key order, oldest first
    std::string live_at_target;  // what a read at target still sees
    size_t keys;
  } cases[] = {
      {2, "", "a@2 ", 3},
      {4, "2.0 ", "a@4 b@3 c@3 ", 3},
      {5, "2.0 4.0 ", "b@3 c@3 ", 3},  // a's deletion at 5 is the target itself: kept
      {6, "2.0 4.0 5.0 3.1 ", "c@3 ", 3},  // b keeps its deletion at 6, a only its put at 7
      {8, "2.0 4.0 5.0 3.1 6.0 3.0 ", "a@7 c@8 ", 2},
  };
  // Whole, or in slices of one or two keys: the same result.
  for (size_t slice : {size_t{1}, size_t{2}, SIZE_MAX}) {
    for (const auto& c : cases) {
      KeyIndex index = Sample();
      std::vector<Revision> removed;
      std::optional<std::string> resume;
      int calls = 0;
      while (!index.Compact(c.target, &removed, &resume, slice)) ++calls;
      // Three keys: a slice of one stops twice, a slice of two once.
      EXPECT_EQ(calls, slice == SIZE_MAX ? 0 : static_cast<int>((3 + slice - 1) / slice) - 1)
          << "slice " << slice;
      std::string got;
      for (const auto& r : removed) {
        got += std::to_string(r.main) + "." + std::to_string(r.sub) + " ";
      }
      EXPECT_EQ(got, c.removed) << "target " << c.target;
      EXPECT_EQ(Live(index, KeyRange("", std::string("\0", 1)), c.target), c.live_at_target)
          << "target " << c.target;
      EXPECT_EQ(index.key_count(), c.keys) << "target " << c.target;
      // Everything newer than the target is untouched.
      EXPECT_EQ(Live(index, KeyRange("", std::string("\0", 1)), 0), "a@7 c@8 ");
    }
  }
}

}  // namespace
}  // namespace mkube::store::mvcc
