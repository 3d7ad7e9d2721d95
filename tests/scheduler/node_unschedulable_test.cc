// Cordon: the seeds' "kubectl cordon" keeps new pods away.
#include "scheduler/plugins/node_unschedulable.h"

#include <gtest/gtest.h>

#include "tests/scheduler/filter_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using framework::Code;
using testing::MakeNode;
using testing::MakePod;
using testing::RunFilterTable;

TEST(NodeUnschedulable, ACordonedNodeTakesOnlyPodsThatTolerateIt) {
  RunFilterTable(
      NodeUnschedulable(),
      {
          {"a schedulable node", MakePod().Obj(), MakeNode("n").Info(), Code::kSuccess, ""},
          {"a cordoned node", MakePod().Obj(), MakeNode("n").Unschedulable().Info(),
           Code::kUnschedulableAndUnresolvable, "node(s) were unschedulable"},
          {"a pod tolerating the cordon",
           MakePod()
               .Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule")
               .Obj(),
           MakeNode("n").Unschedulable().Info(), Code::kSuccess, ""},
          {"a pod tolerating everything", MakePod().Toleration("", "Exists", "", "").Obj(),
           MakeNode("n").Unschedulable().Info(), Code::kSuccess, ""},
          {"a toleration of another effect",
           MakePod()
               .Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoExecute")
               .Obj(),
           MakeNode("n").Unschedulable().Info(), Code::kUnschedulableAndUnresolvable,
           "node(s) were unschedulable"},
      });
}

}  // namespace
}  // namespace mkube::scheduler::plugins
