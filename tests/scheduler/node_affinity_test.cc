// nodeSelector and required node affinity, with the seeds' cases.
#include "scheduler/plugins/node_affinity.h"

#include <gtest/gtest.h>

#include "tests/scheduler/filter_table.h"
#include "tests/scheduler/score_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using framework::Code;
using testing::MakeNode;
using testing::MakePod;
using testing::RunFilterTable;

constexpr Code kNo = Code::kUnschedulableAndUnresolvable;
constexpr char kReason[] = "node(s) didn't match Pod's node affinity/selector";

TEST(NodeAffinity, NodeSelectorAndRequiredTermsFilterNodes) {
  const auto node01 = MakeNode("node01")
                          .Label("kubernetes.io/hostname", "node01")
                          .Label("disktype", "ssd")
                          .Label("cpus", "8");
  const auto node02 =
      MakeNode("node02").Label("kubernetes.io/hostname", "node02").Label("cpus", "2");
  RunFilterTable(
      NodeAffinity(),
      {
          {"no selector, no affinity: anywhere", MakePod().Obj(), node02.Info(), Code::kSuccess,
           ""},
          {"nodeSelector disktype=ssd on the ssd node",
           MakePod().NodeSelector("disktype", "ssd").Obj(), node01.Info(), Code::kSuccess, ""},
          {"nodeSelector disktype=ssd elsewhere", MakePod().NodeSelector("disktype", "ssd").Obj(),
           node02.Info(), kNo, kReason},
          {"the seeds' hard NotIn node02, on node02",
           MakePod().RequiredTerm({{"kubernetes.io/hostname", "NotIn", "node02"}}).Obj(),
           node02.Info(), kNo, kReason},
          {"the seeds' hard NotIn node02, on node01",
           MakePod().RequiredTerm({{"kubernetes.io/hostname", "NotIn", "node02"}}).Obj(),
           node01.Info(), Code::kSuccess, ""},
          {"In", MakePod().RequiredTerm({{"disktype", "In", "hdd", "ssd"}}).Obj(), node01.Info(),
           Code::kSuccess, ""},
          {"Exists", MakePod().RequiredTerm({{"disktype", "Exists"}}).Obj(), node02.Info(), kNo,
           kReason},
          {"DoesNotExist", MakePod().RequiredTerm({{"disktype", "DoesNotExist"}}).Obj(),
           node02.Info(), Code::kSuccess, ""},
          {"Gt compares integers", MakePod().RequiredTerm({{"cpus", "Gt", "4"}}).Obj(),
           node01.Info(), Code::kSuccess, ""},
          {"Gt below", MakePod().RequiredTerm({{"cpus", "Gt", "4"}}).Obj(), node02.Info(), kNo,
           kReason},
          {"Lt", MakePod().RequiredTerm({{"cpus", "Lt", "4"}}).Obj(), node02.Info(), Code::kSuccess,
           ""},
          {"expressions of a term are ANDed",
           MakePod().RequiredTerm({{"disktype", "Exists"}, {"cpus", "Lt", "4"}}).Obj(),
           node01.Info(), kNo, kReason},
          {"terms are ORed",
           MakePod()
               .RequiredTerm({{"disktype", "In", "hdd"}})
               .RequiredTerm({{"cpus", "In", "8"}})
               .Obj(),
           node01.Info(), Code::kSuccess, ""},
          {"selector and affinity must both hold",
           MakePod().NodeSelector("disktype", "ssd").RequiredTerm({{"cpus", "In", "2"}}).Obj(),
           node01.Info(), kNo, kReason},
          {"matchFields on metadata.name",
           MakePod().RequiredTerm({{"metadata.name", "In", "node02"}}, /*fields=*/true).Obj(),
           node02.Info(), Code::kSuccess, ""},
          {"matchFields on another name",
           MakePod().RequiredTerm({{"metadata.name", "In", "node02"}}, /*fields=*/true).Obj(),
           node01.Info(), kNo, kReason},
          {"an empty term matches no node", MakePod().RequiredTerm({}).Obj(), node01.Info(), kNo,
           kReason},
      });
}

TEST(NodeAffinity, AnUnusableTermRejectsThePodInPreFilter) {
  framework::CycleState state;
  const auto st =
      NodeAffinity().PreFilter(state, MakePod().RequiredTerm({{"cpus", "Gt", "many"}}).Obj(), {});
  EXPECT_EQ(st.code(), Code::kUnschedulableAndUnresolvable);
  ASSERT_EQ(st.reasons().size(), 1u);
  EXPECT_NE(st.reasons()[0].find("cannot be used"), std::string::npos) << st.reasons()[0];
  // With its PreFilter's state, Filter decides as without it.
  framework::CycleState ok;
  const api::Pod pod = MakePod().RequiredTerm({{"disktype", "In", "ssd"}}).Obj();
  ASSERT_TRUE(NodeAffinity().PreFilter(ok, pod, {}).ok());
  EXPECT_TRUE(NodeAffinity().Filter(ok, pod, MakeNode("a").Label("disktype", "ssd").Info()).ok());
  EXPECT_FALSE(NodeAffinity().Filter(ok, pod, MakeNode("b").Info()).ok());
}

TEST(NodeAffinity, APodWithoutSelectorOrRequiredTermsSkipsTheFilter) {
  framework::CycleState state;
  EXPECT_TRUE(NodeAffinity().PreFilter(state, MakePod().Obj(), {}).skip());
  EXPECT_TRUE(NodeAffinity().PreFilter(state, MakePod().NodeSelector("a", "b").Obj(), {}).ok());
  EXPECT_TRUE(
      NodeAffinity().PreFilter(state, MakePod().RequiredTerm({{"a", "In", "b"}}).Obj(), {}).ok());
}

TEST(NodeAffinity, PreferredTermsOnlyRank) {
  auto node01 =
      MakeNode("node01").Label("kubernetes.io/hostname", "node01").Label("blue", "a").Ptr();
  auto node02 = MakeNode("node02").Label("kubernetes.io/hostname", "node02").Ptr();
  testing::RunScoreTable(
      NodeAffinity(),
      {
          {"no preferred terms: skipped", MakePod().Obj(), {node01, node02}, {}},
          // The seeds' soft policy for node03, in a cluster without node03: no node matches,
          // every node scores the same, and the pod still goes somewhere.
          {"soft In node03 without a node03",
           MakePod().PreferredTerm(1, {{"kubernetes.io/hostname", "In", "node03"}}).Obj(),
           {node01, node02},
           {0, 0}},
          {"soft In node01",
           MakePod().PreferredTerm(1, {{"kubernetes.io/hostname", "In", "node01"}}).Obj(),
           {node01, node02},
           {100, 0}},
          {"weights add up and scale to 100",
           MakePod()
               .PreferredTerm(20, {{"blue", "In", "a"}})
               .PreferredTerm(60, {{"kubernetes.io/hostname", "In", "node02"}})
               .Obj(),
           {node01, node02},
           {33, 100}},
      });
}
}  // namespace
}  // namespace mkube::scheduler::plugins
