// ParallelFor on the controller-manager's pool of call threads: every item once, at most the
// threads asked for at once, and a ParallelFor inside another finishes. SlowStartBatch with
// items that end on other threads.
#include "controller/internal/pod_control.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace mkube::controller {
namespace {

TEST(ParallelFor, RunsEveryItemOnceWithAtMostTheThreadsAsked) {
  for (int round = 0; round < 20; ++round) {
    std::vector<std::atomic<int>> seen(300);
    std::atomic<int> running{0}, most{0};
    ParallelFor(300, 8, [&](int i) {
      const int now = ++running;
      int m = most.load();
      while (now > m && !most.compare_exchange_weak(m, now)) {
      }
      ++seen[i];
      --running;
    });
    for (int i = 0; i < 300; ++i) ASSERT_EQ(seen[i].load(), 1) << "item " << i;
    EXPECT_LE(most.load(), 8);
  }
}

TEST(ParallelFor, ANestedCallFinishesEvenWhenThePoolIsBusy) {
  std::atomic<int> total{0};
  // Each of 64 outer items (as many as the pool has threads) runs an inner ParallelFor.
  ParallelFor(64, 64, [&](int) { ParallelFor(10, 64, [&](int) { ++total; }); });
  EXPECT_EQ(total.load(), 640);
}

TEST(ParallelFor, OneThreadRunsInOrderOnTheCaller) {
  std::vector<int> order;
  ParallelFor(5, 1, [&](int i) { order.push_back(i); });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

// Items end on threads of their own, after fn has returned, in any order: each batch is
// waited for whole, and the first batch with a failure is the last.
TEST(SlowStartBatch, WaitsForItemsThatEndElsewhere) {
  std::vector<std::thread> threads;
  std::vector<int> started;
  auto run = [&](int fail_at) {
    started.clear();
    absl::Status error;
    const int ok = SlowStartBatch(
        20,
        [&](int i, std::function<void(absl::Status)> done) {
          started.push_back(i);
          threads.emplace_back([i, fail_at, done = std::move(done)] {
            done(i == fail_at ? absl::UnavailableError("no") : absl::OkStatus());
          });
        },
        &error);
    for (auto& t : threads) t.join();
    threads.clear();
    return std::make_pair(ok, error);
  };
  auto [ok, error] = run(-1);
  EXPECT_EQ(ok, 20);
  EXPECT_TRUE(error.ok());
  EXPECT_EQ(started.size(), 20u);
  // Batches 1, 2, 4, 8: item 5 is in the third; the fourth never starts.
  std::tie(ok, error) = run(5);
  EXPECT_EQ(ok, 6);
  EXPECT_EQ(error.message(), "no");
  EXPECT_EQ(started.size(), 7u);
}

}  // namespace
}  // namespace mkube::controller
