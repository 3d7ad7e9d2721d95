#include "store/watch/watch_hub.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/util/eventually.h"

#include "tests/store/store_fixture.h"

namespace mkube::store::watch {
namespace {

using mkube::testing::Eventually;

// A sink that holds what it is sent and refuses once `capacity` responses are waiting.
class FakeSink : public WatchSink {
 public:
  explicit FakeSink(size_t capacity = SIZE_MAX) : capacity_(capacity) {}
  bool Send(etcdserverpb::WatchResponse&& resp, bool force) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!force && pending_.size() >= capacity_) {
      ++refusals_;
      return false;
    }
    pending_.push_back(std::move(resp));
    return true;
  }
  bool HasRoom() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size() < capacity_;
  }
  // Takes everything waiting, as a client reading the stream would.
  std::vector<etcdserverpb::WatchResponse> Drain() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(pending_, {});
  }
  size_t refusals() const {
    std::lock_guard<std::mutex> lock(mu_);
    return refusals_;
  }

 private:
  mutable std::mutex mu_;
  size_t capacity_;
  size_t refusals_ = 0;
  std::vector<etcdserverpb::WatchResponse> pending_;
};

class WatchHubTest : public mvcc::StoreFixture {
 protected:
  void StartHub(HubOptions options = {}) {
    MakeHub(options);
    hub_->Start();
  }
  // The hub without its thread: what is added now is applied when it starts, behind the
  // writes made in between, as a hub busy elsewhere would be.
  void MakeHub(HubOptions options = {}) {
    hub_ = std::make_unique<WatchHub>(store_.get(), options);
    store_->AddCommitListener(hub_.get());
  }
  void TearDown() override { hub_.reset(); }

  // Collects events from the sink until `n` arrived (or time runs out), draining as it goes.
  std::vector<mvccpb::Event> Collect(FakeSink& sink, size_t n, WatchHub* wake = nullptr) {
    std::vector<mvccpb::Event> out;
    Eventually([&] {
      for (auto& r : sink.Drain()) {
        for (auto& e : r.events()) out.push_back(e);
      }
      if (wake) wake->Wake();
      return out.size() >= n;
    });
    return out;
  }

  // The first response `sink` gets is the cancellation of watch `id` at compact revision
  // `compacted`, with no events; then the hub holds no watcher.
  void ExpectCanceledByCompaction(FakeSink& sink, int64_t id, int64_t compacted) {
    std::vector<etcdserverpb::WatchResponse> got;
    ASSERT_TRUE(Eventually([&] {
      for (auto& r : sink.Drain()) got.push_back(r);
      return !got.empty();
    }));
    EXPECT_TRUE(got[0].canceled());
    EXPECT_EQ(got[0].compact_revision(), compacted);
    EXPECT_EQ(got[0].watch_id(), id);
    EXPECT_EQ(got[0].events_size(), 0);
    EXPECT_TRUE(Eventually([&] { return hub_->watcher_count() == 0; }));
  }

  std::unique_ptr<WatchHub> hub_;
};

TEST_F(WatchHubTest, WatchFromThePastThenLive) {
  ASSERT_TRUE(Put("w/a", "1").ok());  // 2
  ASSERT_TRUE(Put("x", "1").ok());    // 3
  ASSERT_TRUE(Put("w/b", "2").ok());  // 4
  StartHub();
  auto sink = std::make_shared<FakeSink>();
  WatchSpec spec{"w/", "w0"};
  hub_->Add(sink, 0, spec, 2);
  ASSERT_TRUE(Delete("w/a").ok());    // 5
  auto events = Collect(*sink, 3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kv().mod_revision(), 2);
  EXPECT_EQ(events[1].kv().mod_revision(), 4);
  EXPECT_EQ(events[2].type(), mvccpb::Event::DELETE);
  EXPECT_EQ(events[2].kv().mod_revision(), 5);
  EXPECT_FALSE(events[2].has_prev_kv()) << "prev_kv only when asked for";
}

TEST_F(WatchHubTest, FiltersAndPrevKv) {
  StartHub();
  auto sink = std::make_shared<FakeSink>();
  WatchSpec spec{"k", ""};
  spec.prev_kv = true;
  spec.no_put = true;
  hub_->Add(sink, 3, spec, store_->Revision() + 1);
  ASSERT_TRUE(Put("k", "old").ok());
  ASSERT_TRUE(Put("k", "new").ok());
  ASSERT_TRUE(Delete("k").ok());
  auto events = Collect(*sink, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type(), mvccpb::Event::DELETE);
  EXPECT_EQ(events[0].prev_kv().value(), "new");
}

TEST_F(WatchHubTest, SlowWatcherCatchesUpWithoutGapsAndDoesNotDelayOthers) {
  StartHub();
  auto slow = std::make_shared<FakeSink>(/*capacity=*/1);
  auto fast = std::make_shared<FakeSink>();
  hub_->Add(slow, 0, WatchSpec{"k/", "k0"}, store_->Revision() + 1);
  hub_->Add(fast, 0, WatchSpec{"k/", "k0"}, store_->Revision() + 1);
  ASSERT_TRUE(Eventually([&] { return hub_->watcher_count() == 2; }));
  constexpr int kWrites = 300;
  // In two halves, the fast watcher read in between: the slow one is offered at least two
  // responses (one would do if the hub were slow enough to gather all 300 events at once).
  std::vector<mvccpb::Event> fast_events;
  for (int half = 0; half < 2; ++half) {
    for (int i = half * kWrites / 2; i < (half + 1) * kWrites / 2; ++i) {
      ASSERT_TRUE(Put("k/" + std::to_string(i % 7), "v").ok());
    }
    auto got = Collect(*fast, kWrites / 2);
    fast_events.insert(fast_events.end(), got.begin(), got.end());
  }
  // The fast watcher has everything while the slow one has not been read at all.
  EXPECT_EQ(fast_events.size(), static_cast<size_t>(kWrites));
  EXPECT_GT(slow->refusals(), 0u);
  auto slow_events = Collect(*slow, kWrites, hub_.get());
  ASSERT_EQ(slow_events.size(), static_cast<size_t>(kWrites));
  for (int i = 0; i < kWrites; ++i) {
    EXPECT_EQ(slow_events[i].kv().mod_revision(), i + 2) << i;
    EXPECT_EQ(fast_events[i].kv().mod_revision(), i + 2) << i;
  }
}

TEST_F(WatchHubTest, WatcherBehindACompactionIsCanceled) {
  StartHub();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put("k", std::to_string(i)).ok());  // 2..11
  ASSERT_TRUE(Compact(8, true).ok());
  auto sink = std::make_shared<FakeSink>();
  hub_->Add(sink, 5, WatchSpec{"k", ""}, 3);
  ExpectCanceledByCompaction(*sink, 5, 8);
}

// The watch is added while the hub is still behind the compaction: the history it asks for is
// gone all the same, so it is canceled rather than served from what the hub still holds.
TEST_F(WatchHubTest, WatcherBehindACompactionIsCanceledWhileTheHubLags) {
  MakeHub();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put("k", std::to_string(i)).ok());  // 2..11
  ASSERT_TRUE(Compact(8, true).ok());
  auto sink = std::make_shared<FakeSink>();
  hub_->Add(sink, 5, WatchSpec{"k", ""}, 3);
  hub_->Start();
  ExpectCanceledByCompaction(*sink, 5, 8);
}

TEST_F(WatchHubTest, ProgressRequestAndCancel) {
  StartHub();
  auto sink = std::make_shared<FakeSink>();
  hub_->Add(sink, 1, WatchSpec{"k", ""}, store_->Revision() + 1);
  ASSERT_TRUE(Put("other", "x").ok());
  hub_->RequestProgress(sink);
  std::vector<etcdserverpb::WatchResponse> got;
  ASSERT_TRUE(Eventually([&] {
    for (auto& r : sink->Drain()) got.push_back(r);
    return !got.empty();
  }));
  EXPECT_EQ(got[0].watch_id(), -1);
  EXPECT_GE(got[0].header().revision(), 1);
  hub_->Cancel(sink, 1);
  got.clear();
  ASSERT_TRUE(Eventually([&] {
    for (auto& r : sink->Drain()) got.push_back(r);
    return !got.empty();
  }));
  EXPECT_TRUE(got[0].canceled());
  EXPECT_EQ(got[0].watch_id(), 1);
  ASSERT_TRUE(Put("k", "after cancel").ok());
  ASSERT_TRUE(Eventually([&] { return hub_->watcher_count() == 0; }));
}

// What waits for the hub thread is bounded: additions beyond max_pending_adds are refused,
// and progress requests of one sink not yet answered share one response.
TEST_F(WatchHubTest, PendingAdditionsAreBoundedAndProgressRequestsJoin) {
  HubOptions options;
  options.max_pending_adds = 2;
  // Not started yet: nothing is taken from the inbox.
  hub_ = std::make_unique<WatchHub>(store_.get(), options);
  store_->AddCommitListener(hub_.get());
  auto sink = std::make_shared<FakeSink>();
  const int64_t next = store_->Revision() + 1;
  EXPECT_TRUE(hub_->Add(sink, 1, WatchSpec{"a", ""}, next));
  EXPECT_TRUE(hub_->Add(sink, 2, WatchSpec{"b", ""}, next));
  EXPECT_FALSE(hub_->Add(sink, 3, WatchSpec{"c", ""}, next));
  EXPECT_EQ(hub_->watcher_count(), 2u);
  hub_->RequestProgress(sink);
  hub_->RequestProgress(sink);
  hub_->RequestProgress(sink);
  hub_->Start();
  // Once the hub has taken the inbox, additions are taken again.
  ASSERT_TRUE(Eventually([&] { return hub_->Add(sink, 4, WatchSpec{"d", ""}, next); }));
  // A cancel queued after the requests is answered after their response.
  hub_->Cancel(sink, 1);
  std::vector<etcdserverpb::WatchResponse> got;
  ASSERT_TRUE(Eventually([&] {
    for (auto& r : sink->Drain()) got.push_back(r);
    return !got.empty() && got.back().canceled();
  }));
  int progress = 0;
  for (const auto& r : got) progress += r.watch_id() == -1 ? 1 : 0;
  EXPECT_EQ(progress, 1);
  EXPECT_TRUE(Eventually([&] { return hub_->watcher_count() == 2; }));
}

}  // namespace
}  // namespace mkube::store::watch
