// mkube-controller-manager through the real binaries, what it does to nodes and their pods:
// the seeds' NoExecute taint and tolerationSeconds, an agent killed with kill -9 (its node
// Unknown, its pods replaced, its return clearing the taints), and drain within a
// PodDisruptionBudget.
#include "tests/integration/controller_fixture.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(ControllerTest, SeedsNoExecuteTaintEvictsAndTheDeploymentRecreatesThePodsElsewhere) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kMyapp).exit_code, 0);
  ASSERT_TRUE(RolledOut("myapp"));
  // A pod that tolerates the taint for 10 s, and one that tolerates it for ever (the seeds'
  // toleration with no tolerationSeconds), both on node02.
  for (const auto& [name, seconds] : std::vector<std::pair<std::string, std::string>>{
           {"patient", "\n    tolerationSeconds: 10"}, {"stays", ""}}) {
    ASSERT_EQ(Ctl({"apply", "-f", "-"},
                  "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
                      "\nspec:\n  nodeName: node02\n  tolerations:\n  - key: cht\n"
                      "    operator: Equal\n    value: mycht\n    effect: NoExecute" +
                      seconds + "\n  containers:\n  - name: c\n    image: busybox\n"
                      "    command: ['sleep', '3600']\n")
                  .exit_code,
              0);
  }
  ASSERT_TRUE(Eventually([] { return RunningWith("", "busybox") == 2; }, std::chrono::seconds(30)));
  EXPECT_THAT(Ctl({"taint", "node", "node02", "cht=mycht:NoExecute"}).out,
              HasSubstr("node/node02 tainted"));
  // Every myapp pod ends up on node01: those on node02 were evicted and replaced.
  EXPECT_TRUE(Eventually([] {
    auto pods = Pods("app=myapp");
    return pods.size() == 3 &&
           NodesOf(pods) == std::vector<std::string>{"node01", "node01", "node01"};
  }, std::chrono::seconds(30))) << Ctl({"get", "pods", "-o", "wide"}).out;
  auto patient = cluster_->client()->Get<api::Pod>("pods", "default", "patient");
  ASSERT_TRUE(patient.ok());
  EXPECT_TRUE(patient->metadata().deletion_timestamp().empty())
      << "evicted before its tolerationSeconds";
  EXPECT_TRUE(Eventually([] {
    auto p = cluster_->client()->Get<api::Pod>("pods", "default", "patient");
    return !p.ok() || !p->metadata().deletion_timestamp().empty();
  }, std::chrono::seconds(30)));
  auto stays = cluster_->client()->Get<api::Pod>("pods", "default", "stays");
  ASSERT_TRUE(stays.ok());
  EXPECT_TRUE(stays->metadata().deletion_timestamp().empty());
  EXPECT_THAT(Ctl({"get", "events"}).out, HasSubstr("Marking for deletion Pod default/patient"));
  EXPECT_THAT(Ctl({"taint", "node", "node02", "cht=mycht:NoExecute-"}).out,
              HasSubstr("node/node02 untainted"));
}

TEST_F(ControllerTest, AKilledAgentsNodeGoesUnknownItsPodsMoveAndItsReturnClearsTheTaint) {
  // node01 cordoned while the deployment rolls out: all three pods on node02, wherever the
  // scheduler would otherwise have put them, and node01 open again for their replacements.
  struct Uncordon {
    ~Uncordon() { Ctl({"uncordon", "node01"}); }
  } uncordon;
  ASSERT_EQ(Ctl({"cordon", "node01"}).exit_code, 0);
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kMyapp).exit_code, 0);
  ASSERT_TRUE(RolledOut("myapp"));
  ASSERT_TRUE(Eventually([] { return RunningWith("app=myapp", "soscscs/myapp:v1") == 3; }));
  ASSERT_EQ(NodesOf(Pods("app=myapp")), (std::vector<std::string>{"node02", "node02", "node02"}))
      << Ctl({"get", "pods", "-o", "wide"}).out;
  ASSERT_EQ(Ctl({"uncordon", "node01"}).exit_code, 0);
  cluster_->agent("node02").Kill9();
  ASSERT_TRUE(Eventually([] {
    return Ctl({"get", "nodes"}).out.find("node02     NotReady") != std::string::npos;
  }, std::chrono::seconds(20))) << Ctl({"get", "nodes"}).out;
  // Its pods show Unknown; after their 2 s toleration they are replaced on node01.
  ASSERT_TRUE(Eventually([] {
    return Ctl({"get", "pods", "-o", "wide"}).out.find("Unknown") != std::string::npos;
  }, std::chrono::seconds(20))) << Ctl({"get", "pods", "-o", "wide"}).out;
  EXPECT_THAT(Ctl({"describe", "node", "node02"}).out,
              HasSubstr("node.kubernetes.io/unreachable:NoExecute"));
  ASSERT_TRUE(Eventually([] {
    auto pods = Pods("app=myapp");
    return pods.size() == 3 &&
           NodesOf(pods) == std::vector<std::string>{"node01", "node01", "node01"};
  }, std::chrono::seconds(30))) << Ctl({"get", "pods", "-o", "wide"}).out << cluster_->Logs();
  // The agent back: Ready, no taint, and the evicted pods it still ran are gone.
  ASSERT_TRUE(cluster_->agent("node02").Start().ok());
  EXPECT_TRUE(Eventually([] {
    auto n = cluster_->client()->Get<api::Node>("nodes", "", "node02");
    return n.ok() && n->spec().taints().empty();
  }, std::chrono::seconds(20)));
  EXPECT_THAT(Ctl({"get", "nodes"}).out, ::testing::ContainsRegex("node02 +Ready"));
  EXPECT_TRUE(Eventually([] {
    apiserver::ListRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_label_selector("app=myapp");
    auto l = cluster_->client()->List(req);
    return l.ok() && l->items_size() == 3;
  }, std::chrono::seconds(30))) << Ctl({"get", "pods", "-o", "wide"}).out;
}

TEST_F(ControllerTest, SeedsDrainEvictsWithinTheDisruptionBudgetAndThePodsComeBackElsewhere) {
  // Four replicas, two on each node, and a budget that keeps three of them available.
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 4
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
        labelSelector:
          matchLabels: {app: web}
      containers:
      - name: web
        image: soscscs/myapp:v1
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 3
  selector:
    matchLabels: {app: web}
)").exit_code,
            0);
  ASSERT_TRUE(RolledOut("web"));
  ASSERT_TRUE(Eventually([] {
    return NodesOf(Pods("app=web")) ==
           std::vector<std::string>{"node01", "node01", "node02", "node02"};
  })) << Ctl({"get", "pods", "-o", "wide"}).out;
  ASSERT_TRUE(Eventually([] {
    return Ctl({"get", "pdb", "web"}).out.find("web    3               N/A               1") !=
           std::string::npos;
  })) << Ctl({"get", "pdb"}).out;
  AvailabilityWatch watch(cluster_->client(), "app=web");
  auto r = Ctl({"drain", "node02", "--ignore-daemonsets", "--delete-local-data", "--force",
                "--timeout=90s"},
               "", std::chrono::seconds(100));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("node/node02 cordoned"));
  EXPECT_THAT(r.err, HasSubstr("(will retry after 5s): Cannot evict pod as it would violate the "
                               "pod's disruption budget."));
  EXPECT_THAT(r.out, HasSubstr("node/node02 drained"));
  ASSERT_TRUE(Eventually([] {
    return NodesOf(Pods("app=web")) ==
           std::vector<std::string>{"node01", "node01", "node01", "node01"};
  }, std::chrono::seconds(30))) << Ctl({"get", "pods", "-o", "wide"}).out;
  watch.Stop();
  EXPECT_GE(watch.fewest(), 3) << "the budget was broken";
  EXPECT_THAT(Ctl({"uncordon", "node02"}).out, HasSubstr("node/node02 uncordoned"));
  Ctl({"delete", "pdb", "web"});
}

}  // namespace
}  // namespace mkube::testing
