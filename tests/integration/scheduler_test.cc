// mkube-scheduler through the real binaries: the seeds' cluster (a tainted master01, node01,
// node02, each a real agent), manifests applied with mkubectl, placement read with `get pods
// -o wide`, reasons with `describe pod`; leader election between two schedulers; a broken
// --config.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/client.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"
#include "tests/util/cluster_suite.h"
#include "tests/util/etcd_client.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;

class SchedulerTest : public ClusterSuite {
 protected:
  static void SetUpTestSuite() {
    // Each node on an address of its own, as hostPorts are forwarded from it.
    // The seeds' images: soscscs/myapp:v1 is the demo web server (on the pod's port 80).
    StartCluster({.node_ips = true, .controller_manager = false});
  }
  void TearDown() override {
    Ctl({"delete", "pods", "--all", "--grace-period=0", "--force"});
    // A pod left over would decide where the next test's pods may go.
    EXPECT_TRUE(Eventually([] { return Pods().empty(); }, std::chrono::seconds(20)))
        << "pods still there 20 s after deleting them all:\n"
        << Ctl({"get", "pods", "-o", "wide"}).out;
  }

  // A plain pod running the seeds' image; mkubectl's exit code.
  static int CreatePod(const std::string& name) {
    return Ctl({"create", "-f", "-"},
               fmt::format(
                   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {}\nspec:\n  containers:\n"
                   "  - name: c\n    image: soscscs/myapp:v1\n",
                   name))
        .exit_code;
  }
  static std::string Seed(const std::string& name) {
    return std::string(MKUBE_SEED_DIR) + "/" + name;
  }
  static std::vector<api::Pod> Pods() {
    apiserver::ListRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    std::vector<api::Pod> out;
    auto list = cluster_->client()->List(req);
    if (!list.ok()) return out;
    for (const auto& bytes : list->items()) out.emplace_back().ParseFromString(bytes);
    return out;
  }
  // The NODE column of `mkubectl get pod NAME -o wide`.
  static std::string NodeColumn(const std::string& pod) {
    auto r = Ctl({"get", "pod", pod, "-o", "wide", "--no-headers"});
    std::vector<std::string> cols;
    std::istringstream in(r.out);
    for (std::string c; in >> c;) cols.push_back(c);
    return cols.size() > 6 ? cols[6] : "";
  }
  // Waits until `mkubectl describe pod` shows `text`; what it shows when it does not.
  static ::testing::AssertionResult DescribeSays(const std::string& pod, const std::string& text) {
    if (Eventually([&] {
          return Ctl({"describe", "pod", pod}).out.find(text) != std::string::npos;
        })) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << Ctl({"describe", "pod", pod}).out;
  }
  static bool Running(const std::string& pod) {
    auto p = cluster_->client()->Get<api::Pod>("pods", "default", pod);
    return p.ok() && p->status().phase() == "Running";
  }
};

TEST_F(SchedulerTest, ThePodIsScheduledRunsAndTheEventsComeInTheSeedsOrder) {
  ASSERT_EQ(CreatePod("web"), 0);
  ASSERT_TRUE(Eventually([] { return Running("web"); }, std::chrono::seconds(20)));
  const std::string node = NodeColumn("web");
  EXPECT_TRUE(node == "node01" || node == "node02") << "never the tainted master: " << node;
  auto d = Ctl({"describe", "pod", "web"});
  EXPECT_THAT(d.out, HasSubstr("Successfully assigned default/web to " + node));
  const auto scheduled = d.out.find("Normal  Scheduled"), started = d.out.find("Normal  Started");
  ASSERT_NE(scheduled, std::string::npos);
  ASSERT_NE(started, std::string::npos);
  EXPECT_LT(scheduled, started) << d.out;
  EXPECT_THAT(d.out, ::testing::ContainsRegex("PodScheduled +True")) << d.out;
}

TEST_F(SchedulerTest, SeedsRequiredNotInNode02NeverLandsOnNode02) {
  // master01 is tainted, node02 excluded: node01 every time.
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Ctl({"apply", "-f", Seed("pod1.yaml")}).exit_code, 0);
    ASSERT_TRUE(Eventually(
        [] { return !NodeColumn("nginx001").empty() && NodeColumn("nginx001") != "<none>"; },
        std::chrono::seconds(10)));
    EXPECT_EQ(NodeColumn("nginx001"), "node01");
    ASSERT_EQ(Ctl({"delete", "pod", "nginx001", "--grace-period=0", "--force"}).exit_code, 0);
    ASSERT_TRUE(Eventually([] { return Pods().empty(); }, std::chrono::seconds(10)));
  }
}

TEST_F(SchedulerTest, SeedsSoftPreferenceForAMissingNode03IsStillScheduled) {
  ASSERT_EQ(Ctl({"apply", "-f", Seed("pod2.yaml")}).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("affinity"); }, std::chrono::seconds(20)));
  const std::string node = NodeColumn("affinity");
  EXPECT_TRUE(node == "node01" || node == "node02") << node;
}

TEST_F(SchedulerTest, SeedsHardAndSoftTogetherHardFirst) {
  // blue=a on node02 only: the soft term wants node02, the hard one forbids it.
  ASSERT_EQ(Ctl({"label", "nodes", "node02", "blue=a"}).exit_code, 0);
  ASSERT_EQ(Ctl({"apply", "-f", Seed("pod3.yaml")}).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("affinity"); }, std::chrono::seconds(20)));
  EXPECT_EQ(NodeColumn("affinity"), "node01");
  ASSERT_EQ(Ctl({"label", "nodes", "node02", "blue-"}).exit_code, 0);
}

TEST_F(SchedulerTest, PendingUntilANodeIsLabelledThenRunning) {
  ASSERT_EQ(Ctl({"create", "-f", "-"},
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sel\nspec:\n  nodeSelector:\n"
                "    cht: a\n  containers:\n  - name: c\n    image: soscscs/myapp:v1\n")
                .exit_code,
            0);
  const std::string why =
      "0/3 nodes are available: 1 node(s) had untolerated taint "
      "{node-role.kubernetes.io/master: }, 2 node(s) didn't match Pod's node affinity/selector.";
  ASSERT_TRUE(DescribeSays("sel", why));
  auto d = Ctl({"describe", "pod", "sel"});
  EXPECT_THAT(d.out, HasSubstr("FailedScheduling"));
  EXPECT_THAT(d.out, ::testing::ContainsRegex("PodScheduled +False"));
  EXPECT_THAT(Ctl({"get", "pod", "sel", "--no-headers"}).out, HasSubstr("Pending"));
  ASSERT_EQ(Ctl({"label", "nodes", "node02", "cht=a"}).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("sel"); }, std::chrono::seconds(20)))
      << Ctl({"describe", "pod", "sel"}).out << cluster_->scheduler().log();
  EXPECT_EQ(NodeColumn("sel"), "node02");
  ASSERT_EQ(Ctl({"label", "nodes", "node02", "cht-"}).exit_code, 0);
}

TEST_F(SchedulerTest, SeedsPodAffinityAndAntiAffinityOverHostnamesAndTheChtDomain) {
  ASSERT_EQ(Ctl({"label", "nodes", "node01", "cht=a"}).exit_code, 0);
  ASSERT_EQ(Ctl({"label", "nodes", "node02", "cht=a"}).exit_code, 0);
  // myapp01 is kept off node02 (and the master is tainted): node01.
  ASSERT_EQ(Ctl({"apply", "-f", Seed("pod8.yaml")}).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("myapp01"); }, std::chrono::seconds(20)));
  ASSERT_EQ(NodeColumn("myapp01"), "node01");
  // Required affinity by hostname: with myapp01, every time.
  ASSERT_EQ(Ctl({"create", "-f", "-"},
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: near\nspec:\n  containers:\n"
                "  - name: c\n    image: soscscs/myapp:v1\n  affinity:\n    podAffinity:\n"
                "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                "      - labelSelector: {matchLabels: {app: myapp01}}\n"
                "        topologyKey: kubernetes.io/hostname\n")
                .exit_code,
            0);
  ASSERT_TRUE(Eventually([] { return Running("near"); }, std::chrono::seconds(20)));
  EXPECT_EQ(NodeColumn("near"), "node01");
  // pod5: the cht domain of myapp01 is both nodes.
  ASSERT_EQ(Ctl({"apply", "-f", Seed("pod5.yaml")}).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("myapp02"); }, std::chrono::seconds(20)));
  EXPECT_THAT(NodeColumn("myapp02"), ::testing::AnyOf("node01", "node02"));
  // pod6: soft anti-affinity by hostname keeps it off myapp01's node.
  ASSERT_EQ(Ctl({"apply", "-f", Seed("pod6.yaml")}).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("myapp10"); }, std::chrono::seconds(20)));
  EXPECT_EQ(NodeColumn("myapp10"), "node02");
  // A dry run says where pod7 would go (nowhere) and why, and creates nothing.
  const size_t pods_before = Pods().size();
  auto dry = Ctl({"schedule", "--dry-run", "-f", Seed("pod7.yaml")});
  EXPECT_EQ(dry.exit_code, 1) << dry.out << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("pod default/myapp20 would stay Pending (dry run)"));
  EXPECT_THAT(dry.out,
              ::testing::ContainsRegex("node01 +rejected by InterPodAffinity: node\\(s\\) didn't "
                                       "match pod anti-affinity rules"))
      << dry.out;
  EXPECT_THAT(dry.out, ::testing::ContainsRegex("master01 +rejected by TaintToleration"));
  EXPECT_EQ(Pods().size(), pods_before);
  dry = Ctl({"schedule", "--dry-run", "-f", Seed("pod6.yaml")});
  EXPECT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("would be scheduled to node02 (dry run)"));
  EXPECT_THAT(dry.out, HasSubstr("InterPodAffinity"));
  EXPECT_THAT(dry.out, HasSubstr("Chosen: node02"));
  // pod7: required anti-affinity in the cht domain, which both nodes share: Pending.
  ASSERT_EQ(Ctl({"apply", "-f", Seed("pod7.yaml")}).exit_code, 0);
  const std::string why =
      "0/3 nodes are available: 1 node(s) had untolerated taint "
      "{node-role.kubernetes.io/master: }, 2 node(s) didn't match pod anti-affinity rules.";
  ASSERT_TRUE(DescribeSays("myapp20", why));
  // The seeds: "change a label so that node01 and node02 differ".
  ASSERT_EQ(Ctl({"label", "nodes", "node02", "cht=b", "--overwrite"}).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("myapp20"); }, std::chrono::seconds(20)))
      << Ctl({"describe", "pod", "myapp20"}).out;
  EXPECT_EQ(NodeColumn("myapp20"), "node02");
  ASSERT_EQ(Ctl({"label", "nodes", "node01", "cht-"}).exit_code, 0);
  ASSERT_EQ(Ctl({"label", "nodes", "node02", "cht-"}).exit_code, 0);
}

TEST_F(SchedulerTest, TopologySpreadKeepsTheSkewAndTheTaintedMasterIsADomainUnlessHonoured) {
  auto pod = [](const std::string& name, const std::string& extra) {
    return fmt::format(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {}\n  labels: {{app: spread}}\nspec:\n"
        "{}  containers:\n  - name: c\n    image: soscscs/myapp:v1\n",
        name, extra);
  };
  for (const char* name : {"s1", "s2"}) {
    ASSERT_EQ(Ctl({"create", "-f", "-"}, pod(name, "  nodeName: node01\n")).exit_code, 0);
  }
  const std::string spread =
      "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: kubernetes.io/hostname\n"
      "    whenUnsatisfiable: DoNotSchedule\n    labelSelector: {matchLabels: {app: spread}}\n";
  // node01 has 2, node02 and master01 none: only node02 keeps the skew at 1.
  ASSERT_EQ(Ctl({"create", "-f", "-"}, pod("s3", spread)).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("s3"); }, std::chrono::seconds(20)));
  EXPECT_EQ(NodeColumn("s3"), "node02");
  // Now node02 has 1 but the master, where nothing may run, still counts 0: nowhere.
  ASSERT_EQ(Ctl({"create", "-f", "-"}, pod("s4", spread)).exit_code, 0);
  const std::string why =
      "0/3 nodes are available: 1 node(s) had untolerated taint "
      "{node-role.kubernetes.io/master: }, 2 node(s) didn't match pod topology spread "
      "constraints.";
  ASSERT_TRUE(DescribeSays("s4", why));
  // nodeTaintsPolicy: Honor leaves the master out: node02 (1) against node01 (2).
  ASSERT_EQ(
      Ctl({"create", "-f", "-"}, pod("s5", spread + "    nodeTaintsPolicy: Honor\n")).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("s5"); }, std::chrono::seconds(20)));
  EXPECT_EQ(NodeColumn("s5"), "node02");
}

TEST_F(SchedulerTest, OneReadWriteDiskPerNodeAndTheAgentSaysItCannotMountIt) {
  auto pod = [](const std::string& name) {
    return fmt::format(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {}\nspec:\n  volumes:\n  - name: data\n"
        "    gcePersistentDisk: {{pdName: pd-1}}\n  containers:\n  - name: c\n"
        "    image: soscscs/myapp:v1\n",
        name);
  };
  auto placed = [](const std::string& name) {
    const std::string n = NodeColumn(name);
    return !n.empty() && n != "<none>";
  };
  ASSERT_EQ(Ctl({"create", "-f", "-"}, pod("d1")).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return placed("d1"); }, std::chrono::seconds(20)));
  ASSERT_EQ(Ctl({"create", "-f", "-"}, pod("d2")).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return placed("d2"); }, std::chrono::seconds(20)));
  EXPECT_NE(NodeColumn("d1"), NodeColumn("d2"));
  ASSERT_EQ(Ctl({"create", "-f", "-"}, pod("d3")).exit_code, 0);
  const std::string why =
      "0/3 nodes are available: 1 node(s) had untolerated taint "
      "{node-role.kubernetes.io/master: }, 2 node(s) had no available disk.";
  ASSERT_TRUE(DescribeSays("d3", why));
  ASSERT_TRUE(DescribeSays("d1", "FailedMount"));
  EXPECT_THAT(Ctl({"describe", "pod", "d1"}).out,
              HasSubstr("mkube-agent cannot attach gcePersistentDisk volumes"));
  EXPECT_THAT(Ctl({"get", "pod", "d1", "--no-headers"}).out, HasSubstr("ContainerCreating"));
}

TEST_F(SchedulerTest, TwoPodsWithOneHostPortNeverShareANodeAndTheNodeForwardsIt) {
  const int port = PickFreePort();
  auto pod = [port](const std::string& name) {
    return fmt::format(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {}\nspec:\n  containers:\n  - name: c\n"
        "    image: soscscs/myapp:v1\n    ports: [{{containerPort: 80, hostPort: {}}}]\n",
        name, port);
  };
  for (const char* name : {"hp1", "hp2"}) {
    ASSERT_EQ(Ctl({"create", "-f", "-"}, pod(name)).exit_code, 0);
  }
  ASSERT_TRUE(
      Eventually([] { return Running("hp1") && Running("hp2"); }, std::chrono::seconds(20)));
  EXPECT_NE(NodeColumn("hp1"), NodeColumn("hp2"));
  ASSERT_EQ(Ctl({"create", "-f", "-"}, pod("hp3")).exit_code, 0);
  ASSERT_TRUE(DescribeSays("hp3",
                           "0/3 nodes are available: 1 node(s) had untolerated taint "
                           "{node-role.kubernetes.io/master: }, 2 node(s) didn't have free ports "
                           "for the requested pod ports."));
  // nodeIP:hostPort reaches the pod on that node.
  for (const char* name : {"hp1", "hp2"}) {
    auto p = cluster_->client()->Get<api::Pod>("pods", "default", name);
    ASSERT_TRUE(p.ok());
    const std::string host_ip = p->status().host_ip();
    EXPECT_THAT(host_ip, ::testing::AnyOf(cluster_->NodeIp("node01"), cluster_->NodeIp("node02")));
    std::string body;
    ASSERT_TRUE(Eventually([&] {
      body = HttpGet(host_ip, port, "/hostname.html");
      return !body.empty();
    })) << host_ip
        << ":" << port;
    EXPECT_EQ(body, std::string(name) + "\n");
  }
  // The pod gone, its port is free again: the pending pod takes it.
  ASSERT_EQ(Ctl({"delete", "pod", "hp1"}).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("hp3"); }, std::chrono::seconds(20)))
      << Ctl({"describe", "pod", "hp3"}).out;
  const std::string ip =
      cluster_->client()->Get<api::Pod>("pods", "default", "hp3")->status().host_ip();
  ASSERT_TRUE(Eventually([&] { return HttpGet(ip, port, "/hostname.html") == "hp3\n"; }));
}

TEST_F(SchedulerTest, APodWithNodeNameNeverPassesThroughTheScheduler) {
  ASSERT_EQ(Ctl({"create", "-f", "-"},
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pinned\nspec:\n  nodeName: node02\n"
                "  containers:\n  - name: c\n    image: soscscs/myapp:v1\n")
                .exit_code,
            0);
  ASSERT_TRUE(Eventually([] { return Running("pinned"); }, std::chrono::seconds(20)));
  auto d = Ctl({"describe", "pod", "pinned"});
  EXPECT_THAT(d.out, HasSubstr("Started"));
  EXPECT_EQ(d.out.find("default-scheduler"), std::string::npos) << d.out;
}

TEST_F(SchedulerTest, ExplainAnnotationGivesASchedulingSection) {
  ASSERT_EQ(Ctl({"create", "-f", "-"},
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: why\n  annotations:\n"
                "    scheduler.mkube.io/explain: \"true\"\nspec:\n  containers:\n  - name: c\n"
                "    image: soscscs/myapp:v1\n")
                .exit_code,
            0);
  ASSERT_TRUE(Eventually([] {
    return Ctl({"describe", "pod", "why"}).out.find("Chosen: ") != std::string::npos;
  }));
  auto d = Ctl({"describe", "pod", "why"});
  EXPECT_THAT(d.out, HasSubstr("Scheduling:\n  Filters: 2 of 3 nodes feasible\n    master01  "
                               "rejected by TaintToleration"));
  EXPECT_THAT(d.out, HasSubstr("TaintToleration 0→100×3=300"));
  EXPECT_EQ(d.out.find("SchedulingExplained"), std::string::npos) << "not among the events";
}

TEST_F(SchedulerTest, TwoSchedulersOneLeadsAndTheOtherTakesOverAfterKill9) {
  std::unique_ptr<SchedulerProcess> second;
  ASSERT_TRUE(cluster_->StartScheduler("sched-b", &second).ok());
  auto holder = [] {
    auto lease = cluster_->client()->Get<api::Lease>("leases", "kube-system", "kube-scheduler");
    return lease.ok() ? lease->spec().holder_identity() : "";
  };
  ASSERT_TRUE(Eventually([&] { return !holder().empty(); }));
  SchedulerProcess* leader = holder() == "sched-a" ? &cluster_->scheduler() : second.get();
  const std::string survivor = holder() == "sched-a" ? "sched-b" : "sched-a";
  leader->Kill9();
  ASSERT_EQ(CreatePod("after"), 0);
  // The lease lasts 2 s: the other scheduler takes over and binds the pod.
  ASSERT_TRUE(Eventually([] { return Running("after"); }, std::chrono::seconds(15)));
  EXPECT_EQ(holder(), survivor);
  auto d = Ctl({"describe", "pod", "after"});
  size_t assigned = 0;
  for (size_t at = d.out.find("Successfully assigned"); at != std::string::npos;
       at = d.out.find("Successfully assigned", at + 1)) {
    ++assigned;
  }
  EXPECT_EQ(assigned, 1u) << "bound once";
  if (leader == &cluster_->scheduler()) {
    ASSERT_TRUE(leader->Start().ok());  // for the tests after this one
  }
}

TEST(SchedulerConfig, ABrokenConfigStopsTheSchedulerWithTheLineAndTheReason) {
  TempDir dir;
  std::ofstream(dir.Sub("bad.yaml"))
      << "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
         "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    score:\n"
         "      enabled:\n      - name: NodeAfinity\n";
  std::ofstream(dir.Sub("token")) << "x\n";
  auto r = RunCommand({BinDir() + "/mkube-scheduler", "--insecure-plaintext", "--token-file",
                       dir.Sub("token"), "--config", dir.Sub("bad.yaml")},
                      {}, "");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("line 8: profiles[0].plugins.score.enabled[0].name: unknown plugin "
                               "\"NodeAfinity\""));
}

}  // namespace
}  // namespace mkube::testing
