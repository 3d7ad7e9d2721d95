// PodFitsResources: requests (containers, init containers, overhead) against what is left.
#include "scheduler/plugins/node_resources_fit.h"

#include <gtest/gtest.h>

#include "scheduler/framework/resources.h"
#include "tests/scheduler/filter_table.h"
#include "tests/scheduler/score_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using framework::Code;
using testing::MakeNode;
using testing::MakePod;
using testing::RunFilterTable;

TEST(PodRequests, TheLargerOfTheContainersSumAndTheLargestInitContainerPlusOverhead) {
  const auto pod = MakePod()
                       .Container({{"cpu", "500m"}, {"memory", "100Mi"}})
                       .Container({{"cpu", "250m"}})
                       .Container({{"cpu", "1"}, {"memory", "1Gi"}}, /*init=*/true)
                       .Container({{"memory", "50Mi"}}, /*init=*/true)
                       .Overhead("cpu", "100m")
                       .Obj();
  const framework::ResourceList r = framework::PodRequests(pod);
  EXPECT_EQ(r.at("cpu"), 1100) << "max(750m, 1) + 100m, in millicores";
  EXPECT_EQ(r.at("memory"), (int64_t{1} << 30) * 1000) << "max(100Mi, 1Gi), in milli-bytes";
}

TEST(NodeResourcesFit, RequestsMustFitInWhatIsLeft) {
  const std::map<std::string, std::string> two_cpus = {
      {"cpu", "2"}, {"memory", "4Gi"}, {"pods", "3"}, {"ephemeral-storage", "10Gi"}};
  const auto half = MakePod("half").Container({{"cpu", "1"}, {"memory", "2Gi"}}).Obj();
  RunFilterTable(
      NodeResourcesFit(),
      {
          {"fits an empty node", MakePod().Container({{"cpu", "1500m"}}).Obj(),
           MakeNode("n").Allocatable(two_cpus).Info(), Code::kSuccess, ""},
          {"a pod without requests only needs room", MakePod().Container({}).Obj(),
           MakeNode("n").Allocatable(two_cpus).Pod(half).Pod(half).Info(), Code::kSuccess, ""},
          {"what others request is taken", MakePod().Container({{"cpu", "1500m"}}).Obj(),
           MakeNode("n").Allocatable(two_cpus).Pod(half).Info(), Code::kUnschedulable,
           "Insufficient cpu"},
          {"ended pods hold nothing", MakePod().Container({{"cpu", "1500m"}}).Obj(),
           MakeNode("n")
               .Allocatable(two_cpus)
               .Pod(MakePod("done").Container({{"cpu", "1"}}).Phase("Succeeded").Obj())
               .Info(),
           Code::kSuccess, ""},
          {"more than the node has can never fit", MakePod().Container({{"memory", "8Gi"}}).Obj(),
           MakeNode("n").Allocatable(two_cpus).Info(), Code::kUnschedulableAndUnresolvable,
           "Insufficient memory"},
          {"an init container's request counts",
           MakePod().Container({{"cpu", "100m"}}).Container({{"cpu", "1500m"}}, true).Obj(),
           MakeNode("n").Allocatable(two_cpus).Pod(half).Info(), Code::kUnschedulable,
           "Insufficient cpu"},
          {"overhead counts", MakePod().Container({{"cpu", "1"}}).Overhead("cpu", "100m").Obj(),
           MakeNode("n").Allocatable(two_cpus).Pod(half).Info(), Code::kUnschedulable,
           "Insufficient cpu"},
          {"ephemeral-storage", MakePod().Container({{"ephemeral-storage", "11Gi"}}).Obj(),
           MakeNode("n").Allocatable(two_cpus).Info(), Code::kUnschedulableAndUnresolvable,
           "Insufficient ephemeral-storage"},
          {"an extended resource the node lacks",
           MakePod().Container({{"example.com/gpu", "1"}}).Obj(),
           MakeNode("n").Allocatable(two_cpus).Info(), Code::kUnschedulableAndUnresolvable,
           "Insufficient example.com/gpu"},
          {"no room for another pod", MakePod().Container({}).Obj(),
           MakeNode("n")
               .Allocatable(two_cpus)
               .Pod(half)
               .Pod(MakePod().Container({}).Obj())
               .Pod(MakePod().Container({}).Obj())
               .Info(),
           Code::kUnschedulable, "Too many pods"},
      });
}

TEST(NodeResourcesFit, EveryShortfallIsAReason) {
  framework::CycleState state;
  const auto st = NodeResourcesFit().Filter(
      state, MakePod().Container({{"cpu", "2"}, {"memory", "3Gi"}}).Obj(),
      MakeNode("n")
          .Allocatable({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "1"}})
          .Pod(MakePod("half").Container({{"cpu", "1"}, {"memory", "2Gi"}}).Obj())
          .Info());
  EXPECT_EQ(st.code(), Code::kUnschedulable);
  EXPECT_EQ(st.reasons(),
            (std::vector<std::string>{"Too many pods", "Insufficient cpu", "Insufficient memory"}));
}

TEST(NodeResourcesFit, LeastAllocatedScoresTheEmptierNodeHigher) {
  auto node = [](const std::string& name, const std::string& cpu, const std::string& memory) {
    return MakeNode(name)
        .Allocatable({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}})
        .Pod(MakePod("used").Container({{"cpu", cpu}, {"memory", memory}}).Obj())
        .Ptr();
  };
  testing::RunScoreTable(NodeResourcesFit(),
                         {
                             // (4 - 2) / 4 and (8 - 4) / 8: 50 each.
                             {"requests count with the node's pods",
                              MakePod().Container({{"cpu", "1"}, {"memory", "2Gi"}}).Obj(),
                              {node("half", "1", "2Gi"), node("idle", "100m", "100Mi")},
                              {50, 72}},
                             // 100m and 200Mi for a container without requests: (4000 - 1100) /
                             // 4000 = 72 and (8192 - 2248) / 8192 = 72.
                             {"a pod without requests counts 100m and 200Mi",
                              MakePod().Image("busybox").Obj(),
                              {node("a", "1", "2Gi")},
                              {72}},
                             {"over-committed resources score 0",
                              MakePod().Container({{"cpu", "4"}, {"memory", "1Gi"}}).Obj(),
                              {node("full", "1", "2Gi")},
                              {31}},
                         });
}

TEST(NodeResourcesFit, MostAllocatedAndResourceWeights) {
  NodeResourcesFit most({.strategy = NodeResourcesFit::Strategy::kMostAllocated,
                         .resources = {{"cpu", 3}, {"memory", 1}}});
  auto node = MakeNode("n").Allocatable({{"cpu", "4"}, {"memory", "8Gi"}}).Ptr();
  // cpu 1/4 → 25 (weight 3), memory 6/8 → 75 (weight 1): (75 + 75) / 4 = 37.
  testing::RunScoreTable(most, {{"weighted mean of the fullness",
                                 MakePod().Container({{"cpu", "1"}, {"memory", "6Gi"}}).Obj(),
                                 {node},
                                 {37}}});
}
}  // namespace
}  // namespace mkube::scheduler::plugins
