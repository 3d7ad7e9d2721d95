// Schedule(): filters, then scores with weights, ties at random, and only enough nodes in a
// large cluster.
#include "scheduler/framework/framework.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "scheduler/framework/config.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::framework {
namespace {

using testing::MakeNode;
using testing::MakePod;

Profile Default() {
  auto p = MakeProfile("default-scheduler", DefaultPlugins(), {}, nullptr);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(*p);
}

std::vector<NodeInfoPtr> Nodes(int n) {
  std::vector<NodeInfoPtr> nodes;
  for (int i = 0; i < n; ++i) {
    nodes.push_back(MakeNode("node" + std::to_string(i))
                        .Allocatable({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}})
                        .Ptr());
  }
  return nodes;
}

TEST(NumFeasibleNodesToFind, AsKubeSchedulerComputesIt) {
  EXPECT_EQ(NumFeasibleNodesToFind(50, 0), 50u) << "under 100 nodes: all";
  EXPECT_EQ(NumFeasibleNodesToFind(1000, 0), 420u) << "50 - 1000/125 = 42%";
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 0), 500u) << "50 - 40 = 10%";
  EXPECT_EQ(NumFeasibleNodesToFind(6000, 0), 300u) << "at least 5%";
  EXPECT_EQ(NumFeasibleNodesToFind(1000, 5), 100u) << "at least 100";
  EXPECT_EQ(NumFeasibleNodesToFind(1000, 100), 1000u);
}

TEST(Schedule, TiesAreBrokenAtRandomAmongTheBest) {
  const Profile profile = Default();
  Snapshot snapshot(Nodes(3));
  std::mt19937_64 rng(1);
  std::map<std::string, int> chosen;
  for (int i = 0; i < 300; ++i) {
    ScheduleResult r = Schedule(profile, MakePod().Image("busybox").Obj(), snapshot, {}, rng);
    ASSERT_TRUE(r.status.ok());
    ++chosen[r.node];
  }
  ASSERT_EQ(chosen.size(), 3u) << "not always the first node";
  for (const auto& [node, n] : chosen) EXPECT_GT(n, 50) << node;
}

TEST(Schedule, TheWeightedSumDecides) {
  // node0 has an untolerated PreferNoSchedule taint (TaintToleration, weight 3: 0 against
  // 100); node1 is fuller (NodeResourcesFit and BalancedAllocation, weight 1 each).
  std::vector<NodeInfoPtr> nodes = {
      MakeNode("tainted")
          .Allocatable({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}})
          .Taint("old", "", "PreferNoSchedule")
          .Ptr(),
      MakeNode("busy")
          .Allocatable({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}})
          .Pod(MakePod("x").Container({{"cpu", "2"}, {"memory", "2Gi"}}).Obj())
          .Ptr()};
  Snapshot snapshot(nodes);
  std::mt19937_64 rng(7);
  ScheduleResult r =
      Schedule(Default(), MakePod().Image("busybox").Obj(), snapshot, {.explain = true}, rng);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.node, "busy");
  ASSERT_EQ(r.scores.size(), 2u);
  EXPECT_EQ(r.scores[0].node->name(), "busy") << "best first";
  int64_t sum = 0;
  for (const auto& p : r.scores[0].plugins) {
    EXPECT_EQ(p.weighted, p.normalized * (p.plugin == "TaintToleration" ? 3
                                          : p.plugin == "NodeAffinity"  ? 2
                                                                        : 1));
    sum += p.weighted;
  }
  EXPECT_EQ(sum, r.scores[0].total);
}

TEST(Schedule, ALargeClusterFiltersOnlyEnoughNodesAndGoesOnWhereItStopped) {
  const Profile profile = Default();
  Snapshot snapshot(Nodes(1000));
  std::mt19937_64 rng(3);
  ScheduleResult first = Schedule(profile, MakePod().Obj(), snapshot, {}, rng);
  ASSERT_TRUE(first.status.ok());
  EXPECT_EQ(first.evaluated, 420u);
  EXPECT_EQ(first.next_start_index, 420u);
  ScheduleResult second =
      Schedule(profile, MakePod().Obj(), snapshot, {.start_index = first.next_start_index}, rng);
  EXPECT_EQ(second.next_start_index, 840u);
  const int picked = std::stoi(second.node.substr(4));
  EXPECT_GE(picked, 420);
  EXPECT_LT(picked, 840);
  ScheduleResult third =
      Schedule(profile, MakePod().Obj(), snapshot, {.start_index = second.next_start_index}, rng);
  EXPECT_EQ(third.next_start_index, 260u) << "wraps around";
}

TEST(Schedule, NoFeasibleNodeGivesTheFitErrorAndEveryNodesReason) {
  Snapshot snapshot(
      {MakeNode("master01").Taint("node-role.kubernetes.io/master", "", "NoSchedule").Ptr(),
       MakeNode("node01").Unschedulable().Ptr()});
  std::mt19937_64 rng(1);
  ScheduleResult r = Schedule(Default(), MakePod().Obj(), snapshot, {}, rng);
  EXPECT_EQ(r.status.code(), Code::kUnschedulable);
  ASSERT_EQ(r.status.reasons().size(), 1u);
  EXPECT_EQ(r.status.reasons()[0],
            "0/2 nodes are available: 1 node(s) had untolerated taint "
            "{node-role.kubernetes.io/master: }, 1 node(s) were unschedulable.");
  EXPECT_EQ(r.diagnosis.rejected.size(), 2u);
  ScheduleResult none = Schedule(Default(), MakePod().Obj(), Snapshot(), {}, rng);
  EXPECT_EQ(none.status.reasons()[0], "no nodes available to schedule pods");
}

}  // namespace
}  // namespace mkube::scheduler::framework
