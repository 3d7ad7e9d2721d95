#include "client/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

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

TEST(WorkQueue, RateLimitedRequeuesBackOffExponentially) {
  {
    // With an hour's base delay the key cannot be back yet, however slow this machine is.
    WorkQueue slow(WorkQueue::Options{std::chrono::hours(1), std::chrono::hours(10)});
    for (int i = 0; i < 3; ++i) slow.AddRateLimited("a");
    EXPECT_EQ(slow.Requeues("a"), 3);
    EXPECT_EQ(slow.Len(), 0u);
    slow.Forget("a");
    EXPECT_EQ(slow.Requeues("a"), 0);
  }
  // With a short one it does come back, once.
  WorkQueue fast(WorkQueue::Options{std::chrono::milliseconds(1), std::chrono::milliseconds(10)});
  fast.AddRateLimited("a");
  fast.AddRateLimited("a");
  auto key = fast.Get();
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(*key, "a");
  fast.Done("a");
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
