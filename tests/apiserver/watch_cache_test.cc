// The watch cache on the in-memory storage: consistent, paged lists; watches that
// see objects enter and leave their selection the same way live and replayed; the window's
// "too old" edge; initial events; slow watchers cut off; bookmarks; a sink that blocks holds
// up nobody else.
#include "apiserver/cache/watch_cache.h"

#include <gtest/gtest.h>

#include <limits>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "api/object.h"
#include "apiserver/storage/requests.h"
#include "apiserver/storage/testing/memory_storage.h"
#include "proto/api/core.pb.h"
#include "tests/util/eventually.h"

namespace mkube::apiserver::cache {
namespace {

using ::mkube::testing::Eventually;

// Records what a watcher is sent as "TYPE name@rv"; refuses live events past `capacity`, as
// a client that stopped reading would.
class RecordingSink : public WatchSink {
 public:
  explicit RecordingSink(size_t capacity = std::numeric_limits<size_t>::max())
      : capacity_(capacity) {}

  bool Push(const Event& e, bool backlog) override {
    absl::MutexLock lock(&mu_);
    if (!backlog && live_ >= capacity_) return false;
    if (!backlog) ++live_;
    std::string s = EventTypeName(e.type);
    if (e.entry) s += " " + e.entry->name;
    events_.push_back(s + "@" + std::to_string(e.revision));
    return true;
  }
  void Close(const absl::Status& why) override {
    absl::MutexLock lock(&mu_);
    closed_ = why;
  }
  std::vector<std::string> events() const {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  // The events without their revisions, bookmarks left out.
  std::vector<std::string> Kinds() const {
    std::vector<std::string> out;
    for (const auto& e : events()) {
      if (e.rfind("BOOKMARK", 0) == 0) continue;
      out.push_back(e.substr(0, e.find('@')));
    }
    return out;
  }
  std::optional<absl::Status> closed() const {
    absl::MutexLock lock(&mu_);
    return closed_;
  }

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  size_t live_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> closed_ ABSL_GUARDED_BY(mu_);
};

// A RecordingSink whose pushes block until `release` is notified, as a sink that does more
// than queue would; `entered` is notified when the first push begins.
class BlockingSink : public RecordingSink {
 public:
  bool Push(const Event& e, bool backlog) override {
    if (!entered.HasBeenNotified()) entered.Notify();  // pushes to one sink never overlap
    release.WaitForNotification();
    return RecordingSink::Push(e, backlog);
  }
  absl::Notification entered, release;
};

// Runs calls on threads of their own and tells whether each returned within its deadline,
// so a call stuck behind a blocked sink fails the test instead of hanging it. The threads
// are joined by Join (or the destructor), once whatever blocks them has been released.
class Bounded {
 public:
  ~Bounded() { Join(); }
  template <typename F>
  bool Within(absl::Duration deadline, F f) {
    auto done = std::make_shared<absl::Notification>();
    threads_.emplace_back([f = std::move(f), done] {
      f();
      done->Notify();
    });
    return done->WaitForNotificationWithTimeout(deadline);
  }
  void Join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  std::vector<std::thread> threads_;
};

class WatchCacheTest : public ::testing::Test {
 protected:
  void StartCache(CacheOptions options = {}) {
    options.bookmark_interval = bookmark_interval_;
    cache_ = std::make_unique<WatchCache>(store_.get(), options);
    ASSERT_TRUE(cache_->Start().ok());
  }

  // Writes a pod straight to the store; returns the revision.
  int64_t PutPod(const std::string& ns, const std::string& name,
                 std::map<std::string, std::string> labels = {}, const std::string& node = "") {
    api::Pod pod;
    pod.mutable_metadata()->set_name(name);
    pod.mutable_metadata()->set_namespace_(ns);
    for (auto& [k, v] : labels) (*pod.mutable_metadata()->mutable_labels())[k] = v;
    pod.mutable_spec()->set_node_name(node);
    auto put =
        store_->Txn(storage::PutTxn("/registry/pods/" + ns + "/" + name, pod.SerializeAsString()));
    EXPECT_TRUE(put.ok()) << put.status();
    return put.ok() ? put->header().revision() : 0;
  }
  int64_t DeletePod(const std::string& ns, const std::string& name) {
    auto del = store_->Txn(storage::DeleteKeyTxn("/registry/pods/" + ns + "/" + name));
    EXPECT_TRUE(del.ok()) << del.status();
    return del.ok() ? del->header().revision() : 0;
  }
  void Sync(int64_t rv) { ASSERT_TRUE(cache_->WaitFor(rv, std::chrono::seconds(10)).ok()); }

  static Filter PodFilter(const std::string& labels = "", const std::string& fields = "",
                          const std::string& ns = "") {
    Filter f;
    f.kind = api::FindResource("pods");
    f.ns = ns;
    if (!labels.empty()) f.labels = *api::Selector::Parse(labels);
    if (!fields.empty()) f.fields = *api::FieldSelector::Parse(fields);
    return f;
  }

  std::chrono::milliseconds bookmark_interval_ = std::chrono::seconds(5);
  std::unique_ptr<storage::Storage> store_ = std::make_unique<storage::testing::MemoryStorage>();
  std::unique_ptr<WatchCache> cache_;
};

std::vector<std::string> Names(const WatchCache::ListResult& r) {
  std::vector<std::string> out;
  for (const auto& e : r.items) out.push_back(e->ns + "/" + e->name);
  return out;
}

TEST_F(WatchCacheTest, ListsInKeyOrderAtOneRevisionWithPaging) {
  StartCache();
  PutPod("b", "p3");
  PutPod("a", "p2");
  PutPod("a", "p1");
  PutPod("b", "p4", {{"app", "x"}});
  const int64_t rv = PutPod("c", "p5", {{"app", "x"}});
  Sync(rv);

  auto all = cache_->List(PodFilter(), 0, "");
  EXPECT_EQ(Names(all), (std::vector<std::string>{"a/p1", "a/p2", "b/p3", "b/p4", "c/p5"}));
  EXPECT_EQ(all.revision, rv);
  EXPECT_TRUE(all.continue_key.empty());

  auto page1 = cache_->List(PodFilter(), 2, "");
  EXPECT_EQ(Names(page1), (std::vector<std::string>{"a/p1", "a/p2"}));
  EXPECT_EQ(page1.remaining, 3);
  auto page2 = cache_->List(PodFilter(), 2, page1.continue_key);
  EXPECT_EQ(Names(page2), (std::vector<std::string>{"b/p3", "b/p4"}));
  auto page3 = cache_->List(PodFilter(), 2, page2.continue_key);
  EXPECT_EQ(Names(page3), (std::vector<std::string>{"c/p5"}));
  EXPECT_TRUE(page3.continue_key.empty());

  EXPECT_EQ(Names(cache_->List(PodFilter("", "", "b"), 0, "")),
            (std::vector<std::string>{"b/p3", "b/p4"}));
  EXPECT_EQ(Names(cache_->List(PodFilter("app=x"), 0, "")),
            (std::vector<std::string>{"b/p4", "c/p5"}));
  EXPECT_EQ(Names(cache_->List(PodFilter("app=x", "", "b"), 0, "")),
            (std::vector<std::string>{"b/p4"}));
}

// One object's life, and what watchers with different selections see of it.
struct SelectionCase {
  std::string name;
  std::string labels, fields;
  std::vector<std::string> want;
};

class WatchCacheSelectionTest : public WatchCacheTest,
                                public ::testing::WithParamInterface<SelectionCase> {};

TEST_P(WatchCacheSelectionTest, LiveAndReplayedWatchesAgree) {
  StartCache();
  const int64_t start = PutPod("default", "other", {{"tier", "none"}});
  Sync(start);
  auto live = std::make_shared<RecordingSink>();
  ASSERT_TRUE(
      cache_->Watch(PodFilter(GetParam().labels, GetParam().fields), start, false, live).ok());

  PutPod("default", "p", {{"tier", "front"}});            // created in the selection
  PutPod("default", "p", {{"tier", "back"}});             // leaves it
  PutPod("default", "p", {{"tier", "front"}});            // comes back
  PutPod("default", "p", {{"tier", "front"}}, "node01");  // changes inside it
  PutPod("default", "p", {{"tier", "front"}, {"x", "1"}}, "node01");
  const int64_t last = DeletePod("default", "p");  // gone
  Sync(last);

  EXPECT_EQ(live->Kinds(), GetParam().want);
  auto replay = std::make_shared<RecordingSink>();
  ASSERT_TRUE(
      cache_->Watch(PodFilter(GetParam().labels, GetParam().fields), start, false, replay).ok());
  EXPECT_EQ(replay->events(), live->events()) << "a replay from the window is the live watch";
}

INSTANTIATE_TEST_SUITE_P(
    Selections, WatchCacheSelectionTest,
    ::testing::Values(
        SelectionCase{
            "everything",
            "",
            "",
            {"ADDED p", "MODIFIED p", "MODIFIED p", "MODIFIED p", "MODIFIED p", "DELETED p"}},
        SelectionCase{"label",
                      "tier=front",
                      "",
                      {"ADDED p", "DELETED p", "ADDED p", "MODIFIED p", "MODIFIED p", "DELETED p"}},
        SelectionCase{"label_not_in", "tier notin (front)", "", {"ADDED p", "DELETED p"}},
        SelectionCase{"node", "", "spec.nodeName=node01", {"ADDED p", "MODIFIED p", "DELETED p"}},
        SelectionCase{
            "unbound", "", "spec.nodeName=", {"ADDED p", "MODIFIED p", "MODIFIED p", "DELETED p"}},
        SelectionCase{"both", "x=1", "spec.nodeName=node01", {"ADDED p", "DELETED p"}},
        SelectionCase{"nothing", "tier=middle", "", {}}),
    [](const auto& info) { return info.param.name; });

TEST_F(WatchCacheTest, DeletedEventsCarryTheLastStateAtTheDeletionRevision) {
  StartCache();
  const int64_t created = PutPod("default", "p", {{"a", "b"}});
  Sync(created);
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_TRUE(cache_->Watch(PodFilter("a=b"), created, false, sink).ok());
  const int64_t deleted = DeletePod("default", "p");
  Sync(deleted);
  EXPECT_EQ(sink->events(), (std::vector<std::string>{"DELETED p@" + std::to_string(deleted)}));
}

TEST_F(WatchCacheTest, AWatchFromBeforeTheWindowIsTooOld) {
  CacheOptions o;
  o.window_events = 4;
  o.backfill_revisions = 0;
  StartCache(o);
  std::vector<int64_t> revs;
  for (int i = 0; i < 10; ++i) revs.push_back(PutPod("default", "p" + std::to_string(i)));
  Sync(revs.back());
  auto old = cache_->Watch(PodFilter(), revs[0], false, std::make_shared<RecordingSink>());
  EXPECT_EQ(old.status().code(), absl::StatusCode::kOutOfRange) << old.status();
  auto recent = std::make_shared<RecordingSink>();
  ASSERT_TRUE(cache_->Watch(PodFilter(), revs[7], false, recent).ok());
  EXPECT_EQ(recent->Kinds(), (std::vector<std::string>{"ADDED p8", "ADDED p9"}));
}

TEST_F(WatchCacheTest, TheWindowIsBoundedByTheSizeOfItsObjectsToo) {
  CacheOptions o;
  o.window_bytes = 64 << 10;
  o.backfill_revisions = 0;
  StartCache(o);
  const std::string big(20 << 10, 'x');
  std::vector<int64_t> revs;
  for (int i = 0; i < 10; ++i)
    revs.push_back(PutPod("default", "p" + std::to_string(i), {{"blob", ""}}));
  for (int i = 0; i < 10; ++i) {
    api::Pod pod;
    pod.mutable_metadata()->set_name("big" + std::to_string(i));
    (*pod.mutable_metadata()->mutable_annotations())["blob"] = big;
    auto put = store_->Txn(
        storage::PutTxn("/registry/pods/default/big" + std::to_string(i), pod.SerializeAsString()));
    ASSERT_TRUE(put.ok()) << put.status();
    revs.push_back(put->header().revision());
  }
  Sync(revs.back());
  // 64 KiB hold the last three 20 KiB objects: a watch that needs big6 again is too old.
  auto old = cache_->Watch(PodFilter(), revs[15], false, std::make_shared<RecordingSink>());
  EXPECT_EQ(old.status().code(), absl::StatusCode::kOutOfRange) << old.status();
  auto recent = std::make_shared<RecordingSink>();
  ASSERT_TRUE(cache_->Watch(PodFilter(), revs[16], false, recent).ok());
  EXPECT_EQ(recent->Kinds(), (std::vector<std::string>{"ADDED big7", "ADDED big8", "ADDED big9"}));
}

TEST_F(WatchCacheTest, HistoryBeforeStartIsInTheWindow) {
  // Writes made before the apiserver started can still be resumed from.
  const int64_t first = PutPod("default", "early", {{"v", "1"}});
  PutPod("default", "early", {{"v", "2"}});
  const int64_t last = DeletePod("default", "early");
  StartCache();
  Sync(last);
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_TRUE(cache_->Watch(PodFilter(), first, false, sink).ok());
  EXPECT_EQ(sink->Kinds(), (std::vector<std::string>{"MODIFIED early", "DELETED early"}));
}

TEST_F(WatchCacheTest, AWatchFromZeroStartsWithEveryObjectHoweverMany) {
  StartCache();
  int64_t rv = 0;
  for (int i = 0; i < 20; ++i) rv = PutPod("default", "p" + std::to_string(i));
  Sync(rv);
  // The initial objects are a backlog the cache bounds, not the client's speed.
  auto sink = std::make_shared<RecordingSink>(/*capacity=*/2);
  ASSERT_TRUE(cache_->Watch(PodFilter(), 0, false, sink).ok());
  EXPECT_EQ(sink->events().size(), 20u);
  EXPECT_FALSE(sink->closed().has_value());
}

TEST_F(WatchCacheTest, AWatcherThatCannotKeepUpIsCutOffAndTheOthersGoOn) {
  StartCache();
  const int64_t start = PutPod("default", "seed");
  Sync(start);
  auto stalled = std::make_shared<RecordingSink>(/*capacity=*/3);
  auto reader = std::make_shared<RecordingSink>();
  ASSERT_TRUE(cache_->Watch(PodFilter(), start, false, stalled).ok());
  ASSERT_TRUE(cache_->Watch(PodFilter(), start, false, reader).ok());
  EXPECT_EQ(cache_->watcher_count(), 2u);
  int64_t rv = 0;
  for (int i = 0; i < 10; ++i) rv = PutPod("default", "p" + std::to_string(i));
  Sync(rv);
  EXPECT_EQ(reader->events().size(), 10u);
  EXPECT_EQ(stalled->events().size(), 3u);
  ASSERT_TRUE(stalled->closed().has_value());
  EXPECT_EQ(stalled->closed()->code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cache_->watcher_count(), 1u);
}

// The backlog of a watch is pushed on the thread that called Watch, outside the cache's
// lock: while that push is stuck, lists, gets, other watches and their live events go on,
// and the stuck watcher then gets everything after its backlog, in order.
TEST_F(WatchCacheTest, ASinkThatBlocksHoldsUpNoListGetOrOtherWatcher) {
  StartCache();
  const int64_t seed = PutPod("default", "seed");
  Sync(seed);
  auto blocked = std::make_shared<BlockingSink>();
  std::thread watching([&] { EXPECT_TRUE(cache_->Watch(PodFilter(), 0, false, blocked).ok()); });
  // (No ASSERT until the sink is released: the threads must end before the test does.)
  EXPECT_TRUE(blocked->entered.WaitForNotificationWithTimeout(absl::Seconds(10)));

  const absl::Duration deadline = absl::Seconds(10);
  Bounded calls;
  auto reader = std::make_shared<RecordingSink>();
  absl::Status watched = absl::UnknownError("not returned");
  EXPECT_TRUE(calls.Within(deadline, [&] {
    watched = cache_->Watch(PodFilter(), seed, false, reader).status();
  })) << "another watch starts";
  const int64_t rv = PutPod("default", "p1");
  absl::Status synced = absl::UnknownError("not returned");
  EXPECT_TRUE(calls.Within(deadline, [&] {
    synced = cache_->WaitFor(rv, std::chrono::seconds(10));
  })) << "the cache takes in the store's events";
  EntryPtr got;
  EXPECT_TRUE(calls.Within(deadline, [&] { got = cache_->Get("/registry/pods/default/p1"); }))
      << "gets are served";
  WatchCache::ListResult listed;
  EXPECT_TRUE(calls.Within(deadline, [&] { listed = cache_->List(PodFilter(), 0, ""); }))
      << "lists are served";
  const std::vector<std::string> live = reader->Kinds();

  blocked->release.Notify();
  watching.join();
  calls.Join();
  EXPECT_TRUE(watched.ok()) << watched;
  EXPECT_TRUE(synced.ok()) << synced;
  EXPECT_EQ(live, (std::vector<std::string>{"ADDED p1"})) << "delivered while the other was stuck";
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(Names(listed), (std::vector<std::string>{"default/p1", "default/seed"}));
  EXPECT_EQ(blocked->Kinds(), (std::vector<std::string>{"ADDED seed", "ADDED p1"}));
  EXPECT_FALSE(blocked->closed().has_value());
}

TEST_F(WatchCacheTest, AWatcherStuckInItsBacklogIsCutOffOnceTooMuchWaitsForIt) {
  CacheOptions o;
  o.pending_events = 2;
  StartCache(o);
  const int64_t seed = PutPod("default", "seed");
  Sync(seed);
  auto blocked = std::make_shared<BlockingSink>();
  std::thread watching([&] { EXPECT_TRUE(cache_->Watch(PodFilter(), 0, false, blocked).ok()); });
  // (No ASSERT until the sink is released: the threads must end before the test does.)
  EXPECT_TRUE(blocked->entered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  int64_t rv = 0;
  for (int i = 0; i < 3; ++i) rv = PutPod("default", "p" + std::to_string(i));
  Bounded calls;
  EXPECT_TRUE(calls.Within(absl::Seconds(10), [&] { Sync(rv); }));
  EXPECT_EQ(cache_->watcher_count(), 0u);
  blocked->release.Notify();
  watching.join();
  EXPECT_EQ(blocked->Kinds(), (std::vector<std::string>{"ADDED seed"}));
  ASSERT_TRUE(blocked->closed().has_value());
  EXPECT_EQ(blocked->closed()->code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(WatchCacheTest, BookmarksGoOnlyToWatchersThatAskAndCarryTheLatestRevision) {
  bookmark_interval_ = std::chrono::milliseconds(50);
  StartCache();
  const int64_t rv = PutPod("default", "p");
  Sync(rv);
  auto with = std::make_shared<RecordingSink>();
  auto without = std::make_shared<RecordingSink>();
  ASSERT_TRUE(cache_->Watch(PodFilter("nothing=here"), rv, true, with).ok());
  ASSERT_TRUE(cache_->Watch(PodFilter("nothing=here"), rv, false, without).ok());
  ASSERT_TRUE(Eventually([&] { return !with->events().empty(); }));
  EXPECT_EQ(with->events().front(), "BOOKMARK@" + std::to_string(rv));
  EXPECT_TRUE(without->events().empty());
}

TEST_F(WatchCacheTest, ListWaitsForARevisionItHasNotSeen) {
  StartCache();
  const int64_t rv = PutPod("default", "p");
  EXPECT_TRUE(cache_->WaitFor(rv, std::chrono::seconds(10)).ok());
  auto st = cache_->WaitFor(rv + 1000, std::chrono::milliseconds(100));
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(std::string(st.message()).find("too large resource version"), std::string::npos) << st;
}

}  // namespace
}  // namespace mkube::apiserver::cache
