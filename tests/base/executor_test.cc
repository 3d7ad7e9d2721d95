// The request executor's bound: a full executor refuses at once (and never runs what it
// refused), a drained one accepts again, and destruction runs what it had accepted.
#include "base/executor.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace mkube {
namespace {

constexpr absl::Duration kDeadline = absl::Seconds(10);

// A task that holds its thread until the gate opens (at the latest when the gate goes).
class Gate {
 public:
  ~Gate() { Open(); }
  std::function<void()> Task() {
    return [started = started_, open = open_] {
      started->Notify();
      open->WaitForNotification();
    };
  }
  bool AwaitStarted() { return started_->WaitForNotificationWithTimeout(kDeadline); }
  void Open() {
    if (!open_->HasBeenNotified()) open_->Notify();
  }

 private:
  const std::shared_ptr<absl::Notification> started_ = std::make_shared<absl::Notification>();
  const std::shared_ptr<absl::Notification> open_ = std::make_shared<absl::Notification>();
};

// Counts the tasks it made that have run.
class Counter {
 public:
  std::function<void()> Task() {
    return [this] {
      absl::MutexLock lock(&mu_);
      ++runs_;
    };
  }
  bool AwaitRuns(int n) {
    absl::MutexLock lock(&mu_);
    const auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return runs_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), kDeadline);
  }
  int runs() const {
    absl::MutexLock lock(&mu_);
    return runs_;
  }

 private:
  mutable absl::Mutex mu_;
  int runs_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(ExecutorTest, AFullExecutorRefusesAndADrainedOneAcceptsAgain) {
  Counter counter;  // outlives the executor: its tasks may run until the executor is gone
  {
    Executor executor(/*threads=*/1, /*max_waiting=*/2);
    Gate gate;  // opened, at the latest, before the executor is destroyed
    ASSERT_TRUE(executor.Run(gate.Task()));
    ASSERT_TRUE(gate.AwaitStarted()) << "the only thread is taken: what follows waits";
    EXPECT_TRUE(executor.Run(counter.Task()));
    EXPECT_TRUE(executor.Run(counter.Task()));
    EXPECT_FALSE(executor.Run(counter.Task())) << "two tasks already wait";
    EXPECT_FALSE(executor.Run(counter.Task())) << "still full";
    gate.Open();
    ASSERT_TRUE(counter.AwaitRuns(2));
    EXPECT_TRUE(executor.Run(counter.Task())) << "drained, it accepts again";
    ASSERT_TRUE(counter.AwaitRuns(3));
  }
  EXPECT_EQ(counter.runs(), 3) << "the refused tasks never ran";
}

TEST(ExecutorTest, AtLeastOneTaskMayWait) {
  Counter counter;
  {
    Executor executor(/*threads=*/1, /*max_waiting=*/0);
    Gate gate;
    ASSERT_TRUE(executor.Run(gate.Task()));
    ASSERT_TRUE(gate.AwaitStarted());
    EXPECT_TRUE(executor.Run(counter.Task()));
    EXPECT_FALSE(executor.Run(counter.Task()));
  }
  EXPECT_EQ(counter.runs(), 1);
}

TEST(ExecutorTest, DestructionRunsEveryAcceptedTask) {
  Counter counter;
  {
    Executor executor(/*threads=*/1, /*max_waiting=*/10);
    Gate gate;
    ASSERT_TRUE(executor.Run(gate.Task()));
    ASSERT_TRUE(gate.AwaitStarted());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(executor.Run(counter.Task()));
    // The gate opens as the scope ends, just before the executor is destroyed: the thread
    // runs the queued tasks while (or, at worst, just before) the destructor waits for it.
  }
  EXPECT_EQ(counter.runs(), 5);
}

}  // namespace
}  // namespace mkube
