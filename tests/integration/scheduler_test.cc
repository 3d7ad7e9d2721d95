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
#include "tests/util/agent_process.h"
#include "tests/util/apiserver_process.h"
#include "tests/util/eventually.h"
#include "tests/util/process.h"
#include "tests/util/scheduler_process.h"
#include "tests/util/store_process.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    store_ = new StoreProcess(dir_->Sub("store"), dir_->Sub("store.log"));
    ASSERT_TRUE(store_->Start().ok());
    api_ = new ApiServerProcess(dir_->path(), store_->address());
    ASSERT_TRUE(api_->Start().ok());
    WriteTestRegistry(dir_->Sub("registry"));
    // The seeds' image: the demo web server.
    std::filesystem::create_directories(dir_->Sub("registry/soscscs/myapp"));
    std::filesystem::copy(dir_->Sub("registry/web/v1"), dir_->Sub("registry/soscscs/myapp/v1"),
                          std::filesystem::copy_options::recursive);
    int i = 0;
    for (const std::string node : {"master01", "node01", "node02"}) {
      AgentProcess::Options o;
      o.dir = dir_->Sub(node);
      o.apiserver = api_->address();
      o.agent_token_file = api_->agent_token_file();
      o.node = node;
      o.registry = dir_->Sub("registry");
      o.pod_cidr = fmt::format("127.1.{}.0/24", ++i);
      if (node == "master01") {
        o.extra = {"--node-labels", "node-role.kubernetes.io/master=", "--register-with-taints",
                   "node-role.kubernetes.io/master:NoSchedule"};
      }
      agents_[i - 1] = new AgentProcess(o);
      auto st = agents_[i - 1]->Start();
      ASSERT_TRUE(st.ok()) << st;
    }
    scheduler_ = new SchedulerProcess(dir_->Sub("sched-a"), api_->address(), "sched-a");
    ASSERT_TRUE(scheduler_->Start().ok()) << scheduler_->log();
    client::ClientOptions o;
    o.address = api_->address();
    o.token = "admin-token";
    client_ = new client::GrpcClient(o);
    std::ofstream(dir_->Sub("config"))
        << "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: http://"
        << api_->address() << "\nusers:\n- name: a\n  user:\n    token: admin-token\n"
        << "contexts:\n- name: t\n  context: {cluster: t, user: a}\ncurrent-context: t\n";
  }
  static void TearDownTestSuite() {
    delete client_;
    delete scheduler_;
    for (auto*& a : agents_) delete a;
    delete api_;
    delete store_;
    delete dir_;
  }
  void TearDown() override {
    Ctl({"delete", "pods", "--all", "--grace-period=0", "--force"});
    Eventually([] { return Pods().empty(); }, std::chrono::seconds(20));
  }

  static CommandResult Ctl(std::vector<std::string> args, const std::string& stdin_text = "") {
    args.insert(args.begin(), BinDir() + "/mkubectl");
    return RunCommand(args, {{"MKUBECONFIG", dir_->Sub("config")}}, stdin_text);
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
    auto list = client_->List(req);
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
  static bool Running(const std::string& pod) {
    auto p = client_->Get<api::Pod>("pods", "default", pod);
    return p.ok() && p->status().phase() == "Running";
  }

  static TempDir* dir_;
  static StoreProcess* store_;
  static ApiServerProcess* api_;
  static AgentProcess* agents_[3];
  static SchedulerProcess* scheduler_;
  static client::ApiClient* client_;
};
TempDir* SchedulerTest::dir_ = nullptr;
StoreProcess* SchedulerTest::store_ = nullptr;
ApiServerProcess* SchedulerTest::api_ = nullptr;
AgentProcess* SchedulerTest::agents_[3] = {};
SchedulerProcess* SchedulerTest::scheduler_ = nullptr;
client::ApiClient* SchedulerTest::client_ = nullptr;

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
  ASSERT_TRUE(Eventually([&] {
    return Ctl({"describe", "pod", "sel"}).out.find(why) != std::string::npos;
  })) << Ctl({"describe", "pod", "sel"}).out;
  auto d = Ctl({"describe", "pod", "sel"});
  EXPECT_THAT(d.out, HasSubstr("FailedScheduling"));
  EXPECT_THAT(d.out, ::testing::ContainsRegex("PodScheduled +False"));
  EXPECT_THAT(Ctl({"get", "pod", "sel", "--no-headers"}).out, HasSubstr("Pending"));
  ASSERT_EQ(Ctl({"label", "nodes", "node02", "cht=a"}).exit_code, 0);
  ASSERT_TRUE(Eventually([] { return Running("sel"); }, std::chrono::seconds(20)))
      << Ctl({"describe", "pod", "sel"}).out << scheduler_->log();
  EXPECT_EQ(NodeColumn("sel"), "node02");
  ASSERT_EQ(Ctl({"label", "nodes", "node02", "cht-"}).exit_code, 0);
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
  SchedulerProcess second(dir_->Sub("sched-b"), api_->address(), "sched-b");
  ASSERT_TRUE(second.Start().ok());
  auto holder = [] {
    auto lease = client_->Get<api::Lease>("leases", "kube-system", "kube-scheduler");
    return lease.ok() ? lease->spec().holder_identity() : "";
  };
  ASSERT_TRUE(Eventually([&] { return !holder().empty(); }));
  SchedulerProcess* leader = holder() == "sched-a" ? scheduler_ : &second;
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
  if (leader == scheduler_) {
    ASSERT_TRUE(scheduler_->Start().ok());  // for the tests after this one
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
