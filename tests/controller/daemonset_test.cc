// The DaemonSet controller: which nodes a daemon pod belongs on, one pod per such node bound
// there by node affinity, nodes that come and go, and a rolling update within maxUnavailable.
#include "controller/daemon/daemonset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/controller/harness.h"

namespace mkube::controller::daemon {
namespace {

using testing::Harness;
using testing::Template;

api::Node Node(const std::string& name, const std::vector<std::pair<std::string, std::string>>& taints = {},
               const std::map<std::string, std::string>& labels = {}) {
  api::Node n;
  n.mutable_metadata()->set_name(name);
  for (const auto& [k, v] : labels) (*n.mutable_metadata()->mutable_labels())[k] = v;
  for (const auto& [key, effect] : taints) {
    auto* t = n.mutable_spec()->add_taints();
    t->set_key(key);
    t->set_effect(effect);
  }
  return n;
}

TEST(ShouldRunTest, SelectorsAffinityAndTaintsAsKubernetesChecksThem) {
  const api::PodTemplateSpec plain = Template({{"app", "agent"}});
  api::PodTemplateSpec on_ssd = plain;
  (*on_ssd.mutable_spec()->mutable_node_selector())["disktype"] = "ssd";
  api::PodTemplateSpec tolerates_master = plain;
  auto* t = tolerates_master.mutable_spec()->add_tolerations();
  t->set_key("node-role.kubernetes.io/master");
  t->set_operator_("Exists");
  t->set_effect("NoSchedule");
  struct Case {
    const char* name;
    const api::PodTemplateSpec& tmpl;
    api::Node node;
    bool want;
  };
  const Case cases[] = {
      {"an untainted node", plain, Node("node01"), true},
      {"the tainted master", plain, Node("master01", {{"node-role.kubernetes.io/master", "NoSchedule"}}),
       false},
      {"the master, tolerated", tolerates_master,
       Node("master01", {{"node-role.kubernetes.io/master", "NoSchedule"}}), true},
      {"a cordoned node: daemon pods tolerate it", plain,
       Node("node01", {{"node.kubernetes.io/unschedulable", "NoSchedule"}}), true},
      {"an unreachable node: tolerated for ever", plain,
       Node("node01", {{"node.kubernetes.io/unreachable", "NoExecute"}}), true},
      {"someone's NoExecute taint", plain, Node("node01", {{"cht", "NoExecute"}}), false},
      {"PreferNoSchedule does not matter", plain, Node("node01", {{"cht", "PreferNoSchedule"}}), true},
      {"nodeSelector matches", on_ssd, Node("node01", {}, {{"disktype", "ssd"}}), true},
      {"nodeSelector does not", on_ssd, Node("node01"), false},
  };
  for (const auto& c : cases) EXPECT_EQ(ShouldRun(c.tmpl, c.node), c.want) << c.name;
}

class DaemonSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ = std::make_unique<DaemonSetController>(&h_.fake, &daemon_sets_, &h_.pods,
                                                        &h_.nodes, &h_.events, &h_.clock);
    for (const auto& n : {Node("master01", {{"node-role.kubernetes.io/master", "NoSchedule"}}),
                          Node("node01"), Node("node02")}) {
      ASSERT_TRUE(h_.fake.Create<api::Node>("nodes", "", n).ok());
    }
    daemon_sets_.Start();
    h_.Start();
  }
  void TearDown() override {
    daemon_sets_.Stop();
    h_.StopInformers();
    controller_.reset();
  }
  // The harness's caches and this fixture's; callers assert it.
  [[nodiscard]] ::testing::AssertionResult Settle() {
    if (auto settled = h_.Settle(); !settled) return settled;
    const bool caught = mkube::testing::Eventually([&] {
      auto list = h_.List<api::DaemonSet>("daemonsets");
      for (const auto& d : list) {
        auto cached = daemon_sets_.Get(client::KeyOf(d));
        if (!cached || cached->metadata().resource_version() != d.metadata().resource_version()) {
          return false;
        }
      }
      return true;
    });
    if (caught) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "the daemonset cache did not catch up in 10 s";
  }
  absl::Status Sync() {
    absl::Status st = controller_->Sync("default/agent");
    EXPECT_TRUE(Settle());
    return st;
  }
  // Node each live pod is pinned to by its affinity, with its image.
  std::map<std::string, std::string> Placement() {
    std::map<std::string, std::string> out;
    for (const auto& p : h_.Pods()) {
      if (!p.metadata().deletion_timestamp().empty()) continue;
      const auto& terms = p.spec().affinity().node_affinity()
                              .required_during_scheduling_ignored_during_execution()
                              .node_selector_terms();
      out[terms.empty() ? "?" : terms[0].match_fields(0).values(0)] = p.spec().containers(0).image();
    }
    return out;
  }

  Harness h_;
  client::Informer<api::DaemonSet> daemon_sets_{&h_.fake, "daemonsets"};
  std::unique_ptr<DaemonSetController> controller_;
};

TEST_F(DaemonSetTest, OnePodPerEligibleNodeFollowingNodesAndRollingOut) {
  api::DaemonSet ds;
  ds.mutable_metadata()->set_name("agent");
  (*ds.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = "agent";
  *ds.mutable_spec()->mutable_template_() = Template({{"app", "agent"}}, "busybox");
  ASSERT_TRUE(h_.fake.Create<api::DaemonSet>("daemonsets", "default", ds).ok());
  ASSERT_TRUE(Settle());
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_EQ(Placement(), (std::map<std::string, std::string>{{"node01", "busybox"},
                                                             {"node02", "busybox"}}));
  const api::Pod one = h_.Pods()[0];
  bool tolerates_unschedulable = false;
  for (const auto& t : one.spec().tolerations()) {
    tolerates_unschedulable |= t.key() == "node.kubernetes.io/unschedulable";
  }
  EXPECT_TRUE(tolerates_unschedulable);
  // A node added later gets its pod.
  ASSERT_TRUE(h_.fake.Create<api::Node>("nodes", "", Node("node03")).ok());
  ASSERT_TRUE(Settle());
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_EQ(Placement().size(), 3u);
  h_.MakeAllReady();
  ASSERT_TRUE(Settle());
  ASSERT_EQ(Sync(), absl::OkStatus());
  auto status = h_.Get<api::DaemonSet>("daemonsets", "agent").status();
  EXPECT_EQ(status.desired_number_scheduled(), 3);
  EXPECT_EQ(status.current_number_scheduled(), 3);
  EXPECT_EQ(status.number_ready(), 3);
  EXPECT_EQ(status.updated_number_scheduled(), 3);
  // A new image: one node at a time (maxUnavailable 1).
  api::DaemonSet cur = h_.Get<api::DaemonSet>("daemonsets", "agent");
  cur.mutable_spec()->mutable_template_()->mutable_spec()->mutable_containers(0)->set_image("nginx");
  ASSERT_TRUE(h_.fake.Update<api::DaemonSet>("daemonsets", "default", cur).ok());
  ASSERT_TRUE(Settle());
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(Sync(), absl::OkStatus());  // one old pod goes
    EXPECT_EQ(Placement().size(), 2u) << "round " << round;
    // Its node's old pod gone for good, a new one comes.
    for (const auto& p : h_.Pods()) {
      if (p.metadata().deletion_timestamp().empty()) continue;
      apiserver::DeleteRequest del;
      del.set_resource("pods");
      del.set_namespace_("default");
      del.set_name(p.metadata().name());
      del.set_grace_period_seconds(0);
      ASSERT_TRUE(h_.fake.Delete(del).ok());
    }
    ASSERT_TRUE(Settle());
    ASSERT_EQ(Sync(), absl::OkStatus());
    h_.MakeAllReady();
    ASSERT_TRUE(Settle());
  }
  EXPECT_EQ(Placement(), (std::map<std::string, std::string>{
                             {"node01", "nginx"}, {"node02", "nginx"}, {"node03", "nginx"}}));
}

}  // namespace
}  // namespace mkube::controller::daemon
