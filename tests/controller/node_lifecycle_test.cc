// The node lifecycle controller against the fake clientset and clock: lost nodes become
// Unknown, get the unreachable taints (NoExecute at the zone's rate) and their pods are marked
// not ready; a node back loses them; NotReady and cordoned nodes get theirs; with every node
// lost nothing is tainted NoExecute.
#include "controller/nodelifecycle/node_lifecycle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/controller/harness.h"

namespace mkube::controller::nodelifecycle {
namespace {

using ::testing::Contains;
using ::testing::UnorderedElementsAreArray;
using testing::Harness;

class NodeLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NodeLifecycleOptions o;
    o.grace_period = absl::Seconds(40);
    o.monitor_period = absl::Seconds(5);
    controller_ = std::make_unique<NodeLifecycleController>(&h_.fake, &h_.nodes, &h_.leases,
                                                            &h_.pods, &h_.events, &h_.clock, o);
    h_.Start();
  }
  void TearDown() override {
    h_.StopInformers();  // no handler may reach the controller once it is gone
    controller_.reset();
  }
  void AddNode(const std::string& name, const std::string& ready = "True",
               const std::string& zone = "") {
    api::Node n;
    n.mutable_metadata()->set_name(name);
    if (!zone.empty()) (*n.mutable_metadata()->mutable_labels())["topology.kubernetes.io/zone"] = zone;
    auto made = h_.fake.Create<api::Node>("nodes", "", n);
    ASSERT_TRUE(made.ok()) << made.status();
    for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
      auto* c = made->mutable_status()->add_conditions();
      c->set_type(type);
      c->set_status(std::string(type) == "Ready" ? ready : "False");
      c->set_last_heartbeat_time(api::Rfc3339(h_.clock.Now()));
    }
    ASSERT_TRUE(h_.fake.Update<api::Node>("nodes", "", *made, "status").ok());
    api::Lease lease;
    lease.mutable_metadata()->set_name(name);
    lease.mutable_spec()->set_renew_time(api::Rfc3339(h_.clock.Now()));
    ASSERT_TRUE(h_.fake.Create<api::Lease>("leases", "kube-node-lease", lease).ok());
  }
  // The agents that are alive renew their leases.
  void Renew(const std::vector<std::string>& names) {
    for (const auto& name : names) {
      auto lease = *h_.fake.Get<api::Lease>("leases", "kube-node-lease", name);
      lease.mutable_spec()->set_renew_time(api::Rfc3339(h_.clock.Now()));
      ASSERT_TRUE(h_.fake.Update<api::Lease>("leases", "kube-node-lease", lease).ok());
    }
  }
  void Pass(const std::vector<std::string>& alive, absl::Duration after) {
    h_.clock.Advance(after);
    Renew(alive);
    ASSERT_TRUE(h_.Settle());
    ASSERT_EQ(controller_->Sync("monitor"), absl::OkStatus());
    ASSERT_TRUE(h_.Settle());
  }
  api::Pod RunningPodOn(const std::string& name, const std::string& node) {
    api::Pod p;
    p.mutable_metadata()->set_name(name);
    p.mutable_spec()->set_node_name(node);
    *p.mutable_spec()->add_containers() = testing::Template({}).spec().containers(0);
    auto made = h_.fake.Create<api::Pod>("pods", "default", p);
    EXPECT_TRUE(made.ok());
    h_.MakeReady(*made);
    return *made;
  }
  std::vector<std::string> Taints(const std::string& node) {
    std::vector<std::string> out;
    const auto n = h_.Get<api::Node>("nodes", node, "");
    for (const auto& t : n.spec().taints()) {
      out.push_back(t.key() + ":" + t.effect());
    }
    return out;
  }
  std::string Ready(const std::string& node) {
    const auto n = h_.Get<api::Node>("nodes", node, "");
    for (const auto& c : n.status().conditions()) {
      if (c.type() == "Ready") return c.status() + " " + c.reason() + " " + c.message();
    }
    return "";
  }

  Harness h_;
  std::unique_ptr<NodeLifecycleController> controller_;
};

TEST_F(NodeLifecycleTest, ALostNodeIsUnknownTaintedAndItsPodsNotReady) {
  AddNode("node01");
  AddNode("node02");
  RunningPodOn("web", "node01");
  Pass({"node01", "node02"}, absl::Seconds(5));
  EXPECT_TRUE(Taints("node01").empty());
  // node01's agent stops; 40 s later it is lost, not before.
  Pass({"node02"}, absl::Seconds(40));
  EXPECT_THAT(Ready("node01"), ::testing::StartsWith("True"));
  Pass({"node02"}, absl::Seconds(5));
  EXPECT_EQ(Ready("node01"), "Unknown NodeStatusUnknown Kubelet stopped posting node status.");
  const auto lost = h_.Get<api::Node>("nodes", "node01", "");
  for (const auto& c : lost.status().conditions()) {
    EXPECT_EQ(c.status(), "Unknown") << c.type();
  }
  EXPECT_THAT(Taints("node01"),
              UnorderedElementsAreArray({"node.kubernetes.io/unreachable:NoSchedule",
                                         "node.kubernetes.io/unreachable:NoExecute"}));
  const auto tainted = h_.Get<api::Node>("nodes", "node01", "");
  for (const auto& t : tainted.spec().taints()) {
    if (t.effect() == "NoExecute") {
      EXPECT_EQ(t.time_added(), api::Rfc3339(h_.clock.Now()));
    }
  }
  EXPECT_TRUE(Taints("node02").empty());
  const api::Pod web = h_.Get<api::Pod>("pods", "web");
  EXPECT_EQ(web.status().reason(), "NodeLost");
  EXPECT_EQ(web.status().message(), "Node node01 which was running pod web is unresponsive");
  for (const auto& c : web.status().conditions()) {
    if (c.type() == "Ready") {
      EXPECT_EQ(c.status(), "False");
    }
  }
  EXPECT_THAT(h_.Events(), Contains("NodeNotReady: Node node01 status is now: NodeNotReady"));
  EXPECT_THAT(h_.Events(), Contains("NodeNotReady: Node is not ready"));

  // The agent is back: Ready again, and the taints go at once.
  auto n = h_.Get<api::Node>("nodes", "node01", "");
  for (auto& c : *n.mutable_status()->mutable_conditions()) {
    c.set_status(c.type() == "Ready" ? "True" : "False");
    c.set_last_heartbeat_time(api::Rfc3339(h_.clock.Now()));
  }
  ASSERT_TRUE(h_.fake.Update<api::Node>("nodes", "", n, "status").ok());
  ASSERT_TRUE(h_.Settle());
  ASSERT_EQ(controller_->Sync("node/node01"), absl::OkStatus());
  EXPECT_TRUE(Taints("node01").empty());
}

TEST_F(NodeLifecycleTest, NotReadyAndCordonedNodesGetTheirTaints) {
  AddNode("node01", "False");
  AddNode("node02");
  ASSERT_TRUE(h_.Settle());
  // NoSchedule at once, on the node's own change; NoExecute with the monitor's pass.
  ASSERT_EQ(controller_->Sync("node/node01"), absl::OkStatus());
  ASSERT_TRUE(h_.Settle());
  EXPECT_THAT(Taints("node01"),
              UnorderedElementsAreArray({"node.kubernetes.io/not-ready:NoSchedule"}));
  Pass({"node01", "node02"}, absl::Seconds(5));
  EXPECT_THAT(Taints("node01"),
              UnorderedElementsAreArray({"node.kubernetes.io/not-ready:NoSchedule",
                                         "node.kubernetes.io/not-ready:NoExecute"}));
  auto n = h_.Get<api::Node>("nodes", "node02", "");
  n.mutable_spec()->set_unschedulable(true);
  ASSERT_TRUE(h_.fake.Update<api::Node>("nodes", "", n).ok());
  ASSERT_TRUE(h_.Settle());
  ASSERT_EQ(controller_->Sync("node/node02"), absl::OkStatus());
  EXPECT_THAT(Taints("node02"),
              UnorderedElementsAreArray({"node.kubernetes.io/unschedulable:NoSchedule"}));
  n = h_.Get<api::Node>("nodes", "node02", "");
  n.mutable_spec()->set_unschedulable(false);
  ASSERT_TRUE(h_.fake.Update<api::Node>("nodes", "", n).ok());
  ASSERT_TRUE(h_.Settle());
  ASSERT_EQ(controller_->Sync("node/node02"), absl::OkStatus());
  EXPECT_TRUE(Taints("node02").empty());
}

TEST_F(NodeLifecycleTest, WithEveryNodeLostNothingIsTaintedNoExecute) {
  AddNode("node01");
  AddNode("node02");
  Pass({"node01", "node02"}, absl::Seconds(1));
  Pass({}, absl::Seconds(45));
  EXPECT_THAT(Ready("node01"), ::testing::StartsWith("Unknown"));
  EXPECT_THAT(Ready("node02"), ::testing::StartsWith("Unknown"));
  Pass({}, absl::Seconds(5));
  for (const char* n : {"node01", "node02"}) {
    EXPECT_THAT(Taints(n), UnorderedElementsAreArray({"node.kubernetes.io/unreachable:NoSchedule"}))
        << n;
  }
}

TEST_F(NodeLifecycleTest, NoExecuteTaintsComeAtTheZonesEvictionRate) {
  for (const char* n : {"a", "b", "c", "d", "e"}) AddNode(n);
  Pass({"a", "b", "c", "d", "e"}, absl::Seconds(1));
  // Two of five lost at once: one tainted now, the other 10 s later (0.1 node/s).
  Pass({"c", "d", "e"}, absl::Seconds(45));
  const int first = (Taints("a").size() == 2) + (Taints("b").size() == 2);
  EXPECT_EQ(first, 1);
  Pass({"c", "d", "e"}, absl::Seconds(5));
  EXPECT_EQ((Taints("a").size() == 2) + (Taints("b").size() == 2), 1);
  Pass({"c", "d", "e"}, absl::Seconds(5));
  EXPECT_EQ(Taints("a").size(), 2u);
  EXPECT_EQ(Taints("b").size(), 2u);
}

TEST_F(NodeLifecycleTest, AMostlyLostSmallZoneIsNotTaintedNoExecute) {
  for (const char* n : {"a", "b", "c", "d"}) AddNode(n);
  Pass({"a", "b", "c", "d"}, absl::Seconds(1));
  // Three of four lost (75% >= 55%, more than 2): a partial disruption in a small zone.
  Pass({"d"}, absl::Seconds(45));
  Pass({"d"}, absl::Seconds(20));
  for (const char* n : {"a", "b", "c"}) {
    EXPECT_THAT(Taints(n), UnorderedElementsAreArray({"node.kubernetes.io/unreachable:NoSchedule"}))
        << n;
  }
}

}  // namespace
}  // namespace mkube::controller::nodelifecycle
