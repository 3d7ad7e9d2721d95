#include "client/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "client/testing/fake_clock.h"

namespace mkube::client {
namespace {

TEST(WorkQueue, DeduplicatesWaitingKeys) {
  WorkQueue q;
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "b");
}

TEST(WorkQueue, AKeyIsNeverProcessedTwiceAtOnce) {
  WorkQueue q;
  q.Add("a");
  auto first = q.Get();
  ASSERT_EQ(*first, "a");
  q.Add("a");  // changed again while a worker has it
  EXPECT_EQ(q.Len(), 0u) << "held back until Done";
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u) << "then queued once more";
  EXPECT_EQ(*q.Get(), "a");
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueue, ManyWorkersNeverOverlapOnAKey) {
  WorkQueue q;
  std::mutex mu;
  std::set<std::string> busy;
  std::atomic<int> overlaps{0}, processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!busy.insert(*key).second) ++overlaps;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        {
          std::lock_guard<std::mutex> lock(mu);
          busy.erase(*key);
        }
        ++processed;
        q.Done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.Add(i % 2 ? "hot" : "k" + std::to_string(i % 7));
  while (q.Len() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(processed.load(), 0);
}

TEST(WorkQueue, RateLimitedRequeuesBackOffExponentiallyOnItsClock) {
  testing::FakeClock clock;
  WorkQueue q(WorkQueue::Options{absl::Milliseconds(5), absl::Seconds(1)}, &clock);
  // 5 ms, 10 ms, 20 ms, ... capped at a second.
  const absl::Duration want[] = {absl::Milliseconds(5),   absl::Milliseconds(10),
                                 absl::Milliseconds(20),  absl::Milliseconds(40),
                                 absl::Milliseconds(80),  absl::Milliseconds(160),
                                 absl::Milliseconds(320), absl::Milliseconds(640),
                                 absl::Seconds(1),        absl::Seconds(1)};
  for (absl::Duration d : want) {
    EXPECT_EQ(q.NextDelay("a"), d);
    q.AddRateLimited("a");
    EXPECT_EQ(q.Len(), 0u) << "not before its delay";
    clock.Advance(d - absl::Nanoseconds(1));
    EXPECT_EQ(q.Len(), 0u) << "not a nanosecond early";
    clock.Advance(absl::Nanoseconds(1));
    ASSERT_EQ(q.Len(), 1u) << "due after " << d;
    EXPECT_EQ(*q.Get(), "a");
    q.Done("a");
  }
  EXPECT_EQ(q.Requeues("a"), 10);
  q.Forget("a");
  EXPECT_EQ(q.Requeues("a"), 0);
  EXPECT_EQ(q.NextDelay("a"), absl::Milliseconds(5));
}

TEST(WorkQueue, EachKeyBacksOffOnItsOwn) {
  testing::FakeClock clock;
  WorkQueue q(&clock);
  for (int i = 0; i < 4; ++i) q.AddRateLimited("flaky");  // 5, 10, 20, 40 ms: the first waits
  q.AddRateLimited("fresh");
  clock.Advance(absl::Milliseconds(5));
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Delayed(), 0u);
  EXPECT_EQ(q.NextDelay("flaky"), absl::Milliseconds(80));
  EXPECT_EQ(q.NextDelay("fresh"), absl::Milliseconds(10));
}

TEST(WorkQueue, AWaitingWorkerWakesWhenADelayedKeyIsDue) {
  testing::FakeClock clock;
  WorkQueue q(&clock);
  q.AddAfter("later", absl::Minutes(1));
  std::optional<std::string> got;
  std::thread worker([&] { got = q.Get(); });
  ASSERT_TRUE(clock.WaitForWaiters(1));
  // A key due sooner than the one the worker waits for is not missed.
  q.AddAfter("sooner", absl::Seconds(1));
  clock.Advance(absl::Seconds(1));
  worker.join();
  EXPECT_EQ(got, "sooner");
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(absl::Minutes(1));
  EXPECT_EQ(q.Len(), 1u);
}

TEST(WorkQueue, AKeyDelayedTwiceWaitsOnceForTheEarlierTime) {
  testing::FakeClock clock;
  WorkQueue q(&clock);
  q.AddAfter("a", absl::Seconds(10));
  q.AddAfter("a", absl::Seconds(1));   // sooner: replaces the 10 s
  q.AddAfter("a", absl::Seconds(5));   // later: ignored
  EXPECT_EQ(q.Delayed(), 1u);
  clock.Advance(absl::Seconds(1));
  ASSERT_EQ(q.Len(), 1u);
  EXPECT_EQ(*q.Get(), "a");
  q.Done("a");
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(q.Len(), 0u) << "it came back once, not once per AddAfter";
  EXPECT_EQ(q.Delayed(), 0u);
}

TEST(WorkQueue, AKeyDueWhileBeingProcessedComesBackAfterDone) {
  testing::FakeClock clock;
  WorkQueue q(&clock);
  q.Add("a");
  ASSERT_EQ(*q.Get(), "a");
  q.AddAfter("a", absl::Seconds(1));
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(q.Len(), 0u) << "held back while a worker has it";
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u);
}

TEST(WorkQueue, ShutDownDrainsWhatIsQueued) {
  WorkQueue q;
  q.Add("a");
  q.ShutDown();
  EXPECT_EQ(q.Get(), "a");
  EXPECT_FALSE(q.Get().has_value());
}

TEST(WorkQueue, ShutDownReleasesWorkers) {
  WorkQueue q;
  std::thread worker([&] { EXPECT_FALSE(q.Get().has_value()); });
  q.ShutDown();
  worker.join();
  q.Add("late");
  EXPECT_EQ(q.Len(), 0u);
}

}  // namespace
}  // namespace mkube::client
