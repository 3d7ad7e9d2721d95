// Pod helpers of the controllers: activity, availability, and the order of deletion.
#include "controller/internal/pods.h"

#include <gtest/gtest.h>

#include "api/object.h"
#include "controller/internal/expectations.h"
#include "client/testing/fake_clock.h"

namespace mkube::controller {
namespace {

api::Pod ReadyPod(absl::Time since) {
  api::Pod p;
  p.mutable_status()->set_phase("Running");
  auto* c = p.mutable_status()->add_conditions();
  c->set_type("Ready");
  c->set_status("True");
  c->set_last_transition_time(api::Rfc3339(since));
  return p;
}

TEST(PodsTest, ActiveMeansNeitherFinishedNorBeingDeleted) {
  api::Pod p;
  p.mutable_status()->set_phase("Running");
  EXPECT_TRUE(IsActive(p));
  p.mutable_status()->set_phase("Succeeded");
  EXPECT_FALSE(IsActive(p));
  p.mutable_status()->set_phase("Failed");
  EXPECT_FALSE(IsActive(p));
  p.mutable_status()->set_phase("Running");
  p.mutable_metadata()->set_deletion_timestamp("2026-12-02T10:00:00Z");
  EXPECT_FALSE(IsActive(p));
}

TEST(PodsTest, AvailableOnceReadyForMinReadySeconds) {
  const absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  const api::Pod p = ReadyPod(t);
  EXPECT_TRUE(IsAvailable(p, 0, t));
  EXPECT_FALSE(IsAvailable(p, 5, t + absl::Seconds(4)));
  EXPECT_TRUE(IsAvailable(p, 5, t + absl::Seconds(5)));
  EXPECT_FALSE(IsAvailable(api::Pod(), 0, t)) << "never ready";
}

TEST(PodsTest, DeletionCostAndRestartsOrderOtherwiseEqualPods) {
  const absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  auto make = [&](const std::string& name, int cost, int restarts) {
    api::Pod p = ReadyPod(t);
    p.mutable_metadata()->set_name(name);
    p.mutable_metadata()->set_creation_timestamp(api::Rfc3339(t));
    p.mutable_spec()->set_node_name(name);  // each alone on its node
    (*p.mutable_metadata()->mutable_annotations())["controller.kubernetes.io/pod-deletion-cost"] =
        std::to_string(cost);
    p.mutable_status()->add_container_statuses()->set_restart_count(restarts);
    return std::make_shared<const api::Pod>(p);
  };
  std::vector<PodPtr> pods = {make("cheap-calm", -5, 0), make("dear", 10, 9),
                              make("plain-restarting", 0, 3), make("plain", 0, 0)};
  SortForDeletion(&pods);
  std::vector<std::string> order;
  for (const auto& p : pods) order.push_back(p->metadata().name());
  EXPECT_EQ(order, (std::vector<std::string>{"cheap-calm", "plain-restarting", "plain", "dear"}));
}

TEST(ExpectationsTest, DeletionsCountEachObjectOnce) {
  client::testing::FakeClock clock;
  Expectations e(&clock);
  EXPECT_TRUE(e.Satisfied("ns/a"));
  e.ExpectDeletions("ns/a", {"ns/p1", "ns/p2"});
  EXPECT_FALSE(e.Satisfied("ns/a"));
  e.DeletionObserved("ns/a", "ns/p1");
  e.DeletionObserved("ns/a", "ns/p1");  // marked, then gone: seen twice
  EXPECT_FALSE(e.Satisfied("ns/a"));
  e.DeletionObserved("ns/a", "ns/p2");
  EXPECT_TRUE(e.Satisfied("ns/a"));
  e.ExpectCreations("ns/a", 2);
  e.CreationObserved("ns/a");
  EXPECT_FALSE(e.Satisfied("ns/a"));
  clock.Advance(Expectations::kTimeout + absl::Seconds(1));
  EXPECT_TRUE(e.Satisfied("ns/a")) << "expired";
}

}  // namespace
}  // namespace mkube::controller
