// Running a profile's filters over the nodes, and the FailedScheduling message they add up to.
#include "scheduler/framework/filter.h"

#include <gtest/gtest.h>

#include <set>

#include "scheduler/plugins/node_unschedulable.h"
#include "scheduler/plugins/taint_toleration.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::framework {
namespace {

using plugins::NodeUnschedulable;
using plugins::TaintToleration;
using testing::MakeNode;
using testing::MakePod;

// A filter that rejects the nodes it is told to, in the node affinity plugin's words (that
// plugin is still to come).
class RejectNodes final : public FilterPlugin {
 public:
  explicit RejectNodes(std::set<std::string> nodes) : nodes_(std::move(nodes)) {}
  std::string_view Name() const override { return "RejectNodes"; }
  Status Filter(const CycleState&, const api::Pod&, const NodeInfo& node) const override {
    if (!nodes_.contains(node.name())) return {};
    return Status::Unresolvable("node(s) didn't match Pod's node affinity/selector");
  }

 private:
  std::set<std::string> nodes_;
};

TEST(RunFilters, TheFailedSchedulingMessageCountsTheReasonsAsKubeSchedulerDoes) {
  std::vector<NodeInfo> nodes = {
      MakeNode("master01").Taint("node-role.kubernetes.io/master", "", "NoSchedule").Info(),
      MakeNode("node01").Info(), MakeNode("node02").Info()};
  TaintToleration taints;
  NodeUnschedulable cordon;
  RejectNodes affinity({"master01", "node01", "node02"});
  FilterChain chain{{}, {&cordon, &taints, &affinity}};
  CycleState state;
  const Diagnosis d = RunFilters(chain, state, MakePod().Obj(), nodes);
  EXPECT_TRUE(d.feasible.empty());
  ASSERT_EQ(d.rejected.size(), 3u);
  EXPECT_EQ(d.rejected.at("master01").plugin(), "TaintToleration") << "the first filter to say no";
  EXPECT_EQ(d.rejected.at("node01").plugin(), "RejectNodes");
  // The seeds' own example.
  EXPECT_EQ(FitErrorMessage(nodes.size(), d),
            "0/3 nodes are available: 1 node(s) had untolerated taint "
            "{node-role.kubernetes.io/master: }, 2 node(s) didn't match Pod's node "
            "affinity/selector.");

  RejectNodes none({});
  FilterChain open{{}, {&cordon, &taints, &none}};
  const Diagnosis fits = RunFilters(open, state, MakePod().Obj(), nodes);
  ASSERT_EQ(fits.feasible.size(), 2u);
  EXPECT_EQ(fits.feasible[0]->name(), "node01");
  EXPECT_EQ(fits.feasible[1]->name(), "node02");
}

}  // namespace
}  // namespace mkube::scheduler::framework
