// Running a profile's filters over the nodes, and the FailedScheduling message they add up to.
#include "scheduler/framework/filter.h"

#include <gtest/gtest.h>

#include "scheduler/plugins/node_affinity.h"
#include "scheduler/plugins/node_unschedulable.h"
#include "scheduler/plugins/taint_toleration.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::framework {
namespace {

using plugins::NodeAffinity;
using plugins::NodeUnschedulable;
using plugins::TaintToleration;
using testing::MakeNode;
using testing::MakePod;

TEST(RunFilters, TheFailedSchedulingMessageCountsTheReasonsAsKubeSchedulerDoes) {
  // The seeds' cluster: a tainted master and two nodes, none of them disktype=ssd.
  Snapshot nodes(
      {MakeNode("master01").Taint("node-role.kubernetes.io/master", "", "NoSchedule").Ptr(),
       MakeNode("node01").Ptr(), MakeNode("node02").Ptr()});
  NodeUnschedulable cordon;
  TaintToleration taints;
  NodeAffinity affinity;
  FilterChain chain{{&affinity}, {&cordon, &taints, &affinity}};
  CycleState state;
  const Diagnosis d =
      RunFilters(chain, state, MakePod().NodeSelector("disktype", "ssd").Obj(), nodes);
  EXPECT_TRUE(d.feasible.empty());
  ASSERT_EQ(d.rejected.size(), 3u);
  EXPECT_EQ(d.RejectionOf("master01")->plugin(), "TaintToleration") << "the first filter to say no";
  EXPECT_EQ(d.RejectionOf("node01")->plugin(), "NodeAffinity");
  // The seeds' own example.
  EXPECT_EQ(FitErrorMessage(nodes.nodes().size(), d),
            "0/3 nodes are available: 1 node(s) had untolerated taint "
            "{node-role.kubernetes.io/master: }, 2 node(s) didn't match Pod's node "
            "affinity/selector.");

  CycleState fresh;
  const Diagnosis fits = RunFilters(chain, fresh, MakePod().Obj(), nodes);
  ASSERT_EQ(fits.feasible.size(), 2u);
  EXPECT_EQ(fits.feasible[0]->name(), "node01");
  EXPECT_EQ(fits.feasible[1]->name(), "node02");
}

TEST(RunFilters, APreFilterRejectionRejectsThePodOnEveryNode) {
  Snapshot nodes({MakeNode("node01").Ptr(), MakeNode("node02").Ptr()});
  NodeAffinity affinity;
  FilterChain chain{{&affinity}, {&affinity}};
  CycleState state;
  const Diagnosis d =
      RunFilters(chain, state, MakePod().RequiredTerm({{"cpus", "Gt", "many"}}).Obj(), nodes);
  EXPECT_FALSE(d.pre_filter.ok());
  EXPECT_EQ(d.pre_filter.plugin(), "NodeAffinity");
  EXPECT_TRUE(d.feasible.empty());
  EXPECT_EQ(FitErrorMessage(nodes.nodes().size(), d)
                .rfind("0/2 nodes are available: pod's node affinity "
                       "cannot be used: ",
                       0),
            0u)
      << FitErrorMessage(nodes.nodes().size(), d);
}

// A filter that counts the nodes it is asked about, and whose PreFilter may say Skip.
class Counting final : public PreFilterPlugin, public FilterPlugin {
 public:
  explicit Counting(bool skip) : skip_(skip) {}
  std::string_view Name() const override { return "Counting"; }
  Status PreFilter(CycleState&, const api::Pod&, const Snapshot&) const override {
    return skip_ ? Status::Skip() : Status();
  }
  Status Filter(const CycleState&, const api::Pod&, const NodeInfo&) const override {
    ++asked_;
    return {};
  }
  mutable int asked_ = 0;

 private:
  const bool skip_;
};

TEST(RunFilters, AFilterWhosePreFilterSkipsIsNotCalled) {
  Snapshot nodes({MakeNode("node01").Ptr(), MakeNode("node02").Ptr()});
  Counting skips(true), asks(false);
  FilterChain chain{{&skips, &asks}, {&skips, &asks}};
  CycleState state;
  const Diagnosis d = RunFilters(chain, state, MakePod().Obj(), nodes);
  EXPECT_EQ(d.feasible.size(), 2u);
  EXPECT_EQ(skips.asked_, 0);
  EXPECT_EQ(asks.asked_, 2);
  // The next cycle starts with a state of its own: nothing skipped.
  CycleState next;
  RunFilters(FilterChain{{&asks}, {&skips, &asks}}, next, MakePod().Obj(), nodes);
  EXPECT_EQ(skips.asked_, 2);
}

}  // namespace
}  // namespace mkube::scheduler::framework
