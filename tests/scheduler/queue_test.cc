// The scheduling queue on a fake clock: back-off 1 s doubling to 10 s, unschedulable pods
// moved by the events that could help them, updates and deletes while a pod is in flight.
#include "scheduler/internal/queue.h"

#include <gtest/gtest.h>

#include "client/testing/fake_clock.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler {
namespace {

using testing::MakePod;

class QueueTest : public ::testing::Test {
 protected:
  // Pops without blocking: the pod at the head, if any is active.
  std::optional<QueuedPod> PopNow() {
    if (queue_.ActiveCount() == 0) return std::nullopt;
    return queue_.Pop();
  }
  framework::PodPtr Pod(const std::string& name, int32_t priority = 0) {
    auto pod = std::make_shared<api::Pod>(MakePod(name).Namespace("default").Obj());
    pod->mutable_spec()->set_priority(priority);
    return pod;
  }

  client::testing::FakeClock clock_;
  SchedulingQueue queue_{&clock_};
};

TEST_F(QueueTest, HigherPriorityFirstThenOlder) {
  queue_.Add(Pod("a"));
  clock_.Advance(absl::Seconds(1));
  queue_.Add(Pod("b", 10));
  queue_.Add(Pod("c"));
  EXPECT_EQ(PopNow()->pod->metadata().name(), "b");
  EXPECT_EQ(PopNow()->pod->metadata().name(), "a");
  EXPECT_EQ(PopNow()->pod->metadata().name(), "c");
  EXPECT_FALSE(PopNow());
}

TEST_F(QueueTest, FailuresBackOffOneSecondDoublingToTen) {
  queue_.Add(Pod("p"));
  for (int want : {1, 2, 4, 8, 10, 10}) {
    auto qp = PopNow();
    ASSERT_TRUE(qp) << want;
    queue_.AddBackoff(std::move(*qp));
    clock_.Advance(absl::Seconds(want) - absl::Milliseconds(1));
    EXPECT_FALSE(PopNow()) << "still backing off before " << want << " s";
    EXPECT_EQ(queue_.BackoffCount(), 1u);
    clock_.Advance(absl::Milliseconds(1));
  }
  EXPECT_TRUE(queue_.Pop());
}

TEST_F(QueueTest, TheBackOffGrowsWithEachAttempt) {
  queue_.Add(Pod("p"));
  QueuedPod qp = *PopNow();
  for (int attempts : {1, 2, 3, 4, 5, 6}) {
    qp.attempts = attempts;
    qp.timestamp = clock_.Now();
    const absl::Duration want = std::min(absl::Seconds(1 << (attempts - 1)), absl::Seconds(10));
    EXPECT_EQ(queue_.BackoffEnd(qp) - clock_.Now(), want) << attempts;
  }
}

TEST_F(QueueTest, UnschedulablePodsWaitForAnEventThatCouldHelpThem) {
  queue_.Add(Pod("p"));
  QueuedPod qp = *PopNow();
  const uint64_t cycle = queue_.cycle();
  qp.rejected_by = {"NodeAffinity"};
  queue_.AddUnschedulable(std::move(qp), cycle);
  EXPECT_EQ(queue_.UnschedulableCount(), 1u);
  clock_.Advance(absl::Minutes(1));
  EXPECT_FALSE(PopNow()) << "no back-off end brings it back: only events";
  queue_.OnEvent({"NodeTaintChange", {"TaintToleration"}});
  EXPECT_EQ(queue_.UnschedulableCount(), 1u) << "a taint does not change node affinity";
  queue_.OnEvent({"NodeLabelChange", {"NodeAffinity"}});
  EXPECT_EQ(queue_.UnschedulableCount(), 0u);
  EXPECT_TRUE(PopNow()) << "back-off long over: straight to the active queue";
}

TEST_F(QueueTest, AnEventDuringTheAttemptSendsThePodToBackOffNotToWait) {
  queue_.Add(Pod("p"));
  QueuedPod qp = *PopNow();
  const uint64_t cycle = queue_.cycle();
  queue_.OnEvent({"NodeAdd", {}});  // while the pod was being scheduled
  queue_.AddUnschedulable(std::move(qp), cycle);
  EXPECT_EQ(queue_.UnschedulableCount(), 0u);
  EXPECT_EQ(queue_.BackoffCount(), 1u);
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(queue_.Pop());
}

TEST_F(QueueTest, UnschedulablePodsAreTriedAgainAfterFiveMinutesAnyway) {
  queue_.Add(Pod("p"));
  QueuedPod qp = *PopNow();
  queue_.AddUnschedulable(std::move(qp), queue_.cycle());
  clock_.Advance(absl::Minutes(5) - absl::Seconds(1));
  EXPECT_FALSE(PopNow());
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(queue_.Pop());
}

TEST_F(QueueTest, OnlyASpecOrLabelChangeMovesAnUnschedulablePod) {
  queue_.Add(Pod("p"));
  QueuedPod qp = *PopNow();
  queue_.AddUnschedulable(std::move(qp), queue_.cycle());
  clock_.Advance(absl::Seconds(30));
  auto status_only = std::make_shared<api::Pod>(*Pod("p"));
  status_only->mutable_status()->add_conditions()->set_type("PodScheduled");
  queue_.Update(status_only);
  EXPECT_EQ(queue_.UnschedulableCount(), 1u) << "its own PodScheduled condition moves nothing";
  auto relabelled = std::make_shared<api::Pod>(*status_only);
  (*relabelled->mutable_metadata()->mutable_labels())["app"] = "x";
  queue_.Update(relabelled);
  EXPECT_EQ(queue_.UnschedulableCount(), 0u);
  auto next = PopNow();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->pod->metadata().labels().at("app"), "x") << "the newest object";
}

TEST_F(QueueTest, APodDeletedOrUpdatedInFlight) {
  queue_.Add(Pod("gone"));
  QueuedPod gone = *PopNow();
  queue_.Delete("default/gone");
  queue_.AddUnschedulable(std::move(gone), queue_.cycle());
  EXPECT_EQ(queue_.UnschedulableCount() + queue_.BackoffCount() + queue_.ActiveCount(), 0u)
      << "a deleted pod does not come back";

  queue_.Add(Pod("changed"));
  QueuedPod changed = *PopNow();
  auto newer = std::make_shared<api::Pod>(*Pod("changed"));
  (*newer->mutable_spec()->mutable_node_selector())["disk"] = "ssd";
  queue_.Update(newer);
  queue_.AddUnschedulable(std::move(changed), queue_.cycle());
  EXPECT_EQ(queue_.BackoffCount(), 1u) << "its new spec is tried after back-off";
  clock_.Advance(absl::Seconds(1));
  auto next = queue_.Pop();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->pod->spec().node_selector().at("disk"), "ssd");
}

TEST_F(QueueTest, PopWaitsOnTheClockForTheBackOffToEnd) {
  queue_.Add(Pod("p"));
  queue_.AddBackoff(*PopNow());
  std::optional<QueuedPod> popped;
  std::thread waiter([&] { popped = queue_.Pop(); });
  ASSERT_TRUE(clock_.WaitForWaiters(1));
  clock_.Advance(absl::Seconds(1));
  waiter.join();
  ASSERT_TRUE(popped);
  std::thread closed([&] { popped = queue_.Pop(); });
  ASSERT_TRUE(clock_.WaitForWaiters(1));
  queue_.Close();
  closed.join();
  EXPECT_FALSE(popped);
}

TEST_F(QueueTest, APopAsleepWakesForABackOffAddedAfterItWentToSleep) {
  // Asleep with only an unschedulable pod (5 minutes away), when an event moves that pod to a
  // 1 s back-off: the Pop must wake at the back-off's end, not in 5 minutes.
  queue_.Add(Pod("p"));
  queue_.AddUnschedulable(*PopNow(), queue_.cycle());
  std::optional<QueuedPod> popped;
  std::thread waiter([&] { popped = queue_.Pop(); });
  ASSERT_TRUE(clock_.WaitForWaiters(1));
  queue_.OnEvent({"NodeAdd", {}});  // back-off of its first attempt not over yet
  ASSERT_EQ(queue_.BackoffCount(), 1u);
  ASSERT_TRUE(clock_.WaitForWaiters(1));
  clock_.Advance(absl::Seconds(1));
  waiter.join();
  EXPECT_TRUE(popped);
}

}  // namespace
}  // namespace mkube::scheduler
