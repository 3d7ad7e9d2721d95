// Taints and tolerations, as the seeds use them.
#include "scheduler/plugins/taint_toleration.h"

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

TEST(TaintToleration, NoScheduleAndNoExecuteTaintsKeepAwayPodsThatDoNotTolerateThem) {
  const auto master =
      MakeNode("master01").Taint("node-role.kubernetes.io/master", "", "NoSchedule");
  RunFilterTable(
      TaintToleration(),
      {
          {"no taints", MakePod().Obj(), MakeNode("node01").Info(), Code::kSuccess, ""},
          {"the master's NoSchedule taint", MakePod().Obj(), master.Info(),
           Code::kUnschedulableAndUnresolvable,
           "node(s) had untolerated taint {node-role.kubernetes.io/master: }"},
          {"tolerated by Exists",
           MakePod().Toleration("node-role.kubernetes.io/master", "Exists", "", "NoSchedule").Obj(),
           master.Info(), Code::kSuccess, ""},
          {"the seeds' NoExecute taint cht=mycht", MakePod().Obj(),
           MakeNode("node01").Taint("cht", "mycht", "NoExecute").Info(),
           Code::kUnschedulableAndUnresolvable, "node(s) had untolerated taint {cht: mycht}"},
          {"tolerated by Equal with its value",
           MakePod().Toleration("cht", "Equal", "mycht", "NoExecute").Obj(),
           MakeNode("node01").Taint("cht", "mycht", "NoExecute").Info(), Code::kSuccess, ""},
          {"Equal with another value does not",
           MakePod().Toleration("cht", "Equal", "other", "NoExecute").Obj(),
           MakeNode("node01").Taint("cht", "mycht", "NoExecute").Info(),
           Code::kUnschedulableAndUnresolvable, "node(s) had untolerated taint {cht: mycht}"},
          {"PreferNoSchedule only ranks", MakePod().Obj(),
           MakeNode("node01").Taint("slow", "yes", "PreferNoSchedule").Info(), Code::kSuccess, ""},
          {"the first untolerated one is named", MakePod().Toleration("a", "Exists", "", "").Obj(),
           MakeNode("node01").Taint("a", "1", "NoSchedule").Taint("b", "2", "NoExecute").Info(),
           Code::kUnschedulableAndUnresolvable, "node(s) had untolerated taint {b: 2}"},
      });
}

TEST(TaintToleration, PreferNoScheduleIsAvoidedWhenPossible) {
  auto clean = MakeNode("clean").Ptr();
  auto soft = MakeNode("soft").Taint("gpu", "yes", "PreferNoSchedule").Ptr();
  auto softer = MakeNode("softer")
                    .Taint("gpu", "yes", "PreferNoSchedule")
                    .Taint("old", "", "PreferNoSchedule")
                    .Ptr();
  testing::RunScoreTable(TaintToleration(),
                         {
                             {"fewer untolerated PreferNoSchedule taints score higher",
                              MakePod().Obj(),
                              {clean, soft, softer},
                              {100, 50, 0}},
                             {"a toleration of the effect counts",
                              MakePod().Toleration("gpu", "Equal", "yes", "PreferNoSchedule").Obj(),
                              {clean, soft, softer},
                              {100, 100, 0}},
                             {"a toleration without effect counts too",
                              MakePod().Toleration("", "Exists", "", "").Obj(),
                              {clean, soft, softer},
                              {100, 100, 100}},
                             {"a NoSchedule toleration does not",
                              MakePod().Toleration("gpu", "Exists", "", "NoSchedule").Obj(),
                              {clean, soft},
                              {100, 0}},
                         });
}
}  // namespace
}  // namespace mkube::scheduler::plugins
