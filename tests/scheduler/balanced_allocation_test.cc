// BalancedResourceAllocation, as Kubernetes 1.32 scores it.
#include "scheduler/plugins/balanced_allocation.h"

#include "tests/scheduler/score_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using testing::MakeNode;
using testing::MakePod;

// A node with 10 cpus and 10Gi, whose pods already request `cpu` and `memory`.
framework::NodeInfoPtr Node(const std::string& name, const std::string& cpu,
                            const std::string& memory) {
  auto n = MakeNode(name).Allocatable({{"cpu", "10"}, {"memory", "10Gi"}, {"pods", "110"}});
  if (!cpu.empty()) n.Pod(MakePod("used").Container({{"cpu", cpu}, {"memory", memory}}).Obj());
  return n.Ptr();
}

TEST(BalancedAllocation, ScoresTheNodeWithTheMostEqualSharesHighest) {
  testing::RunScoreTable(BalancedAllocation(),
                         {
                             // The seeds: node01 at cpu:memory 20:60, node02 at 50:50 — node02 is
                             // preferred, though node01 is less used.
                             {"the seeds' 20:60 against 50:50",
                              MakePod().Container({{"cpu", "1"}, {"memory", "1Gi"}}).Obj(),
                              {Node("node01", "1", "5Gi"), Node("node02", "4", "4Gi")},
                              {80, 100}},
                             {"a pod without requests adds nothing: an empty node is balanced",
                              MakePod().Image("busybox").Obj(),
                              {Node("empty", "", ""), Node("cpu-heavy", "8", "0")},
                              {100, 60}},
                             {"fractions are capped at 1",
                              MakePod().Container({{"cpu", "20"}}).Obj(),
                              {Node("a", "", "")},
                              {50}},
                         });
}

TEST(BalancedAllocation, ThreeResourcesUseTheirStandardDeviation) {
  BalancedAllocation plugin({.resources = {{"cpu", 1}, {"memory", 1}, {"ephemeral-storage", 1}}});
  auto node = MakeNode("n")
                  .Allocatable({{"cpu", "10"}, {"memory", "10Gi"}, {"ephemeral-storage", "10Gi"}})
                  .Ptr();
  // Fractions 0.1, 0.4, 0.7: mean 0.4, std sqrt(0.06) ≈ 0.2449 → 75.
  testing::RunScoreTable(
      plugin,
      {{"0.1, 0.4, 0.7",
        MakePod().Container({{"cpu", "1"}, {"memory", "4Gi"}, {"ephemeral-storage", "7Gi"}}).Obj(),
        {node},
        {75}}});
}

}  // namespace
}  // namespace mkube::scheduler::plugins
