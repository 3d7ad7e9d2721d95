// topologySpreadConstraints and default spreading, filter and score.
#include "scheduler/plugins/pod_topology_spread.h"

#include <gtest/gtest.h>

#include "tests/scheduler/filter_table.h"
#include "tests/scheduler/score_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::RunClusterFilterTable;
using testing::RunScoreTable;

constexpr char kSkew[] = "node(s) didn't match pod topology spread constraints";
constexpr char kMissing[] =
    "node(s) didn't match pod topology spread constraints (missing required label)";
constexpr char kHost[] = "kubernetes.io/hostname";
constexpr char kZone[] = "topology.kubernetes.io/zone";

testing::NodeWrapper Node(const std::string& name, const std::string& zone = "") {
  auto n = MakeNode(name).Label(kHost, name);
  if (!zone.empty()) n.Label(kZone, zone);
  return n;
}

api::Pod Web(int i) {
  return MakePod("web-" + std::to_string(i)).Namespace("default").Label("app", "web").Obj();
}

testing::PodWrapper NewWeb() { return MakePod("new").Namespace("default").Label("app", "web"); }

TEST(PodTopologySpread, DoNotScheduleKeepsTheSkew) {
  const auto by_host = NewWeb().Spread(1, kHost, "DoNotSchedule", {{"app", "web"}});
  const auto by_zone = NewWeb().Spread(1, kZone, "DoNotSchedule", {{"app", "web"}});
  RunClusterFilterTable(
      PodTopologySpread(),
      {
          {"by hostname: only the emptiest node stays within maxSkew 1",
           by_host.Obj(),
           {Node("node01").Pod(Web(1)).Pod(Web(2)).Ptr(), Node("node02").Pod(Web(3)).Ptr(),
            Node("node03").Ptr()},
           {kSkew, kSkew, ""}},
          {"by zone: the nodes of the fuller zone are refused",
           by_zone.Obj(),
           {Node("node01", "a").Pod(Web(1)).Ptr(), Node("node02", "a").Ptr(),
            Node("node03", "b").Ptr()},
           {kSkew, kSkew, ""}},
          {"a node without the key is refused",
           by_zone.Obj(),
           {Node("node01", "a").Ptr(), Node("node02").Ptr()},
           {"", kMissing}},
          {"a selector of several labels counts pods group by group: not those being deleted, "
           "not those of another namespace, those with more labels",
           NewWeb().Label("tier", "front")
               .Spread(1, kHost, "DoNotSchedule", {{"app", "web"}, {"tier", "front"}})
               .Obj(),
           {Node("node01")
                .Pod(MakePod("going").Namespace("default").Label("app", "web")
                         .Label("tier", "front").Terminating().Obj())
                .Pod(MakePod("elsewhere").Namespace("other").Label("app", "web")
                         .Label("tier", "front").Obj())
                .Ptr(),
            Node("node02")
                .Pod(MakePod("more").Namespace("default").Label("app", "web")
                         .Label("tier", "front").Label("extra", "x").Obj())
                .Ptr(),
            Node("node03").Pod(Web(1)).Ptr()},
           {"", kSkew, ""}},
          {"a pod the selector does not select adds nothing to the skew",
           MakePod().Namespace("default").Spread(1, kHost, "DoNotSchedule", {{"app", "web"}}).Obj(),
           {Node("node01").Pod(Web(1)).Ptr(), Node("node02").Ptr()},
           {"", ""}},
          {"a constraint without a selector counts no pod",
           NewWeb().Spread(1, kHost, "DoNotSchedule", {}).Obj(),
           {Node("node01").Pod(Web(1)).Pod(Web(2)).Ptr(), Node("node02").Ptr()},
           {"", ""}},
          {"pods of other namespaces and pods being deleted are not counted",
           by_host.Obj(),
           {Node("node01")
                .Pod(MakePod("x").Namespace("other").Label("app", "web").Obj())
                .Pod(MakePod("y").Namespace("default").Label("app", "web").Terminating().Obj())
                .Ptr(),
            Node("node02").Ptr()},
           {"", ""}},
          {"minDomains 3 with two zones: the emptiest counts as 0",
           NewWeb().Spread(1, kZone, "DoNotSchedule", {{"app", "web"}}, 3).Obj(),
           {Node("node01", "a").Pod(Web(1)).Ptr(), Node("node02", "b").Pod(Web(2)).Ptr()},
           {kSkew, kSkew}},
          {"without minDomains the same nodes fit",
           by_zone.Obj(),
           {Node("node01", "a").Pod(Web(1)).Ptr(), Node("node02", "b").Pod(Web(2)).Ptr()},
           {"", ""}},
          {"nodeAffinityPolicy Honor: a node the pod cannot go to is no domain",
           NewWeb()
               .NodeSelector("disk", "ssd")
               .Spread(1, kHost, "DoNotSchedule", {{"app", "web"}})
               .Obj(),
           {Node("node01").Label("disk", "ssd").Pod(Web(1)).Ptr(), Node("node02").Ptr()},
           {"", ""}},
          {"nodeTaintsPolicy Honor: nor is a node whose taints the pod does not tolerate",
           NewWeb().Spread(1, kHost, "DoNotSchedule", {{"app", "web"}}, 0, "Honor").Obj(),
           {Node("node01").Pod(Web(1)).Ptr(), Node("node02").Taint("gpu", "", "NoSchedule").Ptr()},
           {"", ""}},
          {"nodeTaintsPolicy Ignore (the default): the tainted node is the emptiest domain",
           by_host.Obj(),
           {Node("node01").Pod(Web(1)).Ptr(), Node("node02").Taint("gpu", "", "NoSchedule").Ptr()},
           {kSkew, ""}},
      });
}

// The controllers' selectors, as the scheduler finds them.
struct OwnedBy : framework::Handle {
  std::vector<api::LabelSelector> selectors;
  std::vector<api::LabelSelector> OwnerSelectors(const api::Pod&) const override {
    return selectors;
  }
};

TEST(PodTopologySpread, ScoresSpreadOwnedPodsAndSoftConstraints) {
  OwnedBy handle;
  (*handle.selectors.emplace_back().mutable_match_labels())["app"] = "web";
  const PodTopologySpread defaults({}, &handle);
  RunScoreTable(defaults,
                {
                    {"a ReplicaSet's pods spread over the nodes (no zones): the empty node wins",
                     NewWeb().Obj(),
                     {Node("node01").Pod(Web(1)).Pod(Web(2)).Ptr(), Node("node02").Ptr()},
                     {40, 100}},
                    {"equal nodes score equal",
                     NewWeb().Obj(),
                     {Node("node01").Pod(Web(1)).Ptr(), Node("node02").Pod(Web(2)).Ptr()},
                     {100, 100}},
                });
  RunScoreTable(PodTopologySpread({}, nullptr),
                {{"a bare pod is not spread",
                  NewWeb().Obj(),
                  {Node("node01").Pod(Web(1)).Ptr(), Node("node02").Ptr()},
                  {}}});
  RunScoreTable(
      PodTopologySpread(),
      {{"ScheduleAnyway by zone: the emptier zone best, a node without a zone 0",
        NewWeb().Spread(1, kZone, "ScheduleAnyway", {{"app", "web"}}).Obj(),
        {Node("node01", "a").Pod(Web(1)).Ptr(), Node("node02", "b").Ptr(), Node("node03").Ptr()},
        {0, 100, 0}},
       {"DoNotSchedule constraints do not score",
        NewWeb().Spread(1, kZone, "DoNotSchedule", {{"app", "web"}}).Obj(),
        {Node("node01", "a").Pod(Web(1)).Ptr()},
        {}}});
}

}  // namespace
}  // namespace mkube::scheduler::plugins
