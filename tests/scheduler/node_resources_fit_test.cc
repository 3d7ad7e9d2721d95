// PodFitsResources: requests (containers, init containers, overhead) against what is left.
#include "scheduler/plugins/node_resources_fit.h"

#include <gtest/gtest.h>

#include "scheduler/framework/resources.h"
#include "tests/scheduler/filter_table.h"
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

}  // namespace
}  // namespace mkube::scheduler::plugins
