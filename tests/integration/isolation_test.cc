// Containers held apart from the node by the real mkube-agent: a root filesystem of their own
// (the node's state, its keys and other pods' files are not there), a user other than root, a
// hostname, capabilities dropped, volumes shared between a pod's containers, and exec entering
// all of it, also after the agent was killed and started again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "tests/integration/agent_fixture.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;

class IsolationTest : public AgentTest {
 protected:
  static void SetUpTestSuite() {
    agent_flags_ = {"--pod-max-pids", "64"};
    AgentTest::SetUpTestSuite();
  }
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "containers are isolated only by an agent running as root";
    if (!Isolated()) {
      auto node = client()->Get<api::Node>("nodes", "", "node01");
      GTEST_SKIP() << "this host offers: "
                   << (node.ok() ? node->metadata().annotations().at("mkube.io/isolation") : "?");
    }
  }
  // Runs a shell command in the pod's container through mkubectl exec.
  static CommandResult Exec(const std::string& pod, const std::string& command,
                            const std::string& container = "") {
    std::vector<std::string> args = {"exec", pod};
    if (!container.empty()) args.insert(args.end(), {"-c", container});
    args.insert(args.end(), {"--", "sh", "-c", command});
    return Ctl(args);
  }
  // Whether node01 holds containers to limits of this kind (memory, cpu, pids).
  static bool Cgroups(const std::string& kind) {
    auto node = client()->Get<api::Node>("nodes", "", "node01");
    if (!node.ok()) return false;
    const std::string said = node->metadata().annotations().at("mkube.io/isolation");
    const size_t limits = said.find("cgroup v1 limits (");
    return limits != std::string::npos && said.find(kind, limits) < said.find(')', limits);
  }
  static std::string Sandbox(const api::Pod& pod) {
    return fmt::format("{}/pods/{}", Node01().root(), pod.metadata().uid());
  }
  // The container's cgroup folder in a hierarchy (memory, cpu, pids), from the agent's record.
  static std::string Cgroup(const api::Pod& pod, const std::string& container,
                            const std::string& controller) {
    std::ifstream in(fmt::format("{}/logs/{}/0.pid", Sandbox(pod), container));
    auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return "";
    for (const auto& dir : j.value("cgroups", std::vector<std::string>{})) {
      if (dir.find("/" + controller + "/") != std::string::npos) return dir;
    }
    return "";
  }
  static int64_t ReadNumber(const std::string& path, const std::string& key = "") {
    std::ifstream in(path);
    if (key.empty()) {
      int64_t v = -1;
      in >> v;
      return v;
    }
    std::string k;
    int64_t v = 0;
    while (in >> k >> v) {
      if (k == key) return v;
    }
    return -1;
  }
  static std::string Logs(const std::string& pod, const std::string& container = "") {
    std::vector<std::string> args = {"logs", pod};
    if (!container.empty()) args.insert(args.end(), {"-c", container});
    return Ctl(args).out;
  }
};

TEST_F(IsolationTest, APodSeesNeitherTheNodesSecretsNorOtherPodsFiles) {
  api::Pod keeper = CreatePod("keeper", R"(  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo s3cret > /data/secret; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
)");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("keeper", "Running"); }));
  const std::string secret = Sandbox(keeper) + "/volumes/data/secret";
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(secret); }));
  // Paths of the node that hold what would make a pod cluster admin.
  const std::string agent_token = cluster_->apiserver().agent_token_file();
  const std::vector<std::string> forbidden = {
      secret, Node01().root(), agent_token, cluster_->dir().path(),
      std::filesystem::path(agent_token).parent_path().string()};
  std::string probe;
  for (const auto& path : forbidden) {
    probe +=
        fmt::format("if cat {0} 2>/dev/null || ls {0} 2>/dev/null; then echo LEAK {0}; fi; ", path);
  }
  // Nor through another process's root in /proc: a pod sees only its own processes.
  const std::string through_proc =
      "for p in /proc/[0-9]*; do cat $p/root/data/secret 2>/dev/null && echo LEAK $p; done; ";
  CreatePod("snoop", fmt::format(R"(  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "{}echo done"]
)",
                                 probe + through_proc));
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("snoop", "Succeeded"); }));
  EXPECT_EQ(Logs("snoop"), "done\n");
  // The same through exec, into the pod that holds the secret (its own file it sees).
  auto r = Exec("keeper", probe + "cat /data/secret");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "s3cret\n");
  // Its root holds the image, the system's programs and its own /etc, /proc, /dev, /tmp.
  r = Exec("keeper", "ls /");
  for (const char* there : {"bin\n", "data\n", "dev\n", "etc\n", "proc\n", "tmp\n", "usr\n"}) {
    EXPECT_THAT(r.out, HasSubstr(there));
  }
  for (const char* absent : {"home\n", "root\n", "var\n", "work\n", "opt\n"}) {
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr(absent)));
  }
  EXPECT_EQ(Exec("keeper", "hostname").out, "keeper\n");
  // Its own PID namespace: its init, its program, and the exec'd shell with its ls.
  // (busybox's shell runs its last command in its own place.)
  EXPECT_THAT(Exec("keeper", "cat /proc/1/comm; cat /proc/2/cmdline | tr '\\0' ' '").out,
              ::testing::MatchesRegex("mkube-init\n(sh -c echo s3cret > /data/secret; )?sleep 3600 "));
  // The node's folder is its owner's alone.
  struct stat st;
  ASSERT_EQ(stat(Node01().root().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  Ctl({"delete", "pod", "keeper", "snoop", "--grace-period=0"});
}

// Root in a container (uid 0 without capabilities) may still write what file modes allow:
// the kernel's knobs under /proc are read-only and its secrets read empty; the node's files
// are not there for root either. (Checked through the mount table, not by writing a knob.)
TEST_F(IsolationTest, RootInAContainerFindsProcsKnobsReadOnlyAndNoNodeFiles) {
  CreatePod("root-probe", R"(  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    securityContext: {runAsUser: 0}
)");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("root-probe", "Running"); }));
  EXPECT_EQ(Exec("root-probe", "id -u").out, "0\n");
  // (What this node's kernel has of them: sysrq-trigger and kcore are configured out of some.)
  const std::string mounts = Exec("root-probe", "cat /proc/self/mounts").out;
  for (const char* knob : {"/proc/sys", "/proc/sysrq-trigger"}) {
    if (!std::filesystem::exists(knob)) continue;
    bool read_only = false;
    for (absl::string_view line : absl::StrSplit(mounts, '\n')) {
      if (absl::StrContains(line, std::string(" ") + knob + " ")) {
        read_only = absl::StrContains(line, " ro,");
      }
    }
    EXPECT_TRUE(read_only) << knob << " in\n" << mounts;
  }
  for (const char* secret : {"/proc/kcore", "/proc/timer_list", "/proc/keys"}) {
    if (!std::filesystem::exists(secret)) continue;
    EXPECT_EQ(Exec("root-probe", fmt::format("wc -c < {}", secret)).out, "0\n") << secret;
  }
  auto r = Exec(
      "root-probe",
      fmt::format(
          "ls {} || ls {}", Node01().root(),
          std::filesystem::path(cluster_->apiserver().agent_token_file()).parent_path().string()));
  EXPECT_NE(r.exit_code, 0) << r.out;
  Ctl({"delete", "pod", "root-probe", "--grace-period=0"});
}

TEST_F(IsolationTest, ContainersRunAsTheirUserWithCapabilitiesDropped) {
  CreatePod("users",
            R"(  securityContext: {runAsUser: 1000, runAsGroup: 2000, supplementalGroups: [3000]}
  containers:
  - name: plain
    image: busybox
    command: ["sleep", "3600"]
    securityContext: {runAsUser: 65534, runAsGroup: 65534}
  - name: pod
    image: busybox
    command: ["sleep", "3600"]
  - name: locked
    image: busybox
    command: ["sleep", "3600"]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
)");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("users", "Running"); }));
  EXPECT_EQ(Exec("users", "id -u; id -g", "plain").out, "65534\n65534\n");
  EXPECT_EQ(Exec("users", "id -u; id -g; id -G", "pod").out, "1000\n2000\n2000 3000\n");
  // NET_BIND_SERVICE (bit 10) only, by default; none at all when dropped.
  EXPECT_EQ(Exec("users", "grep CapEff /proc/self/status", "pod").out,
            "CapEff:\t0000000000000400\n");
  EXPECT_EQ(Exec("users", "grep -E 'CapEff|CapBnd|NoNewPrivs' /proc/self/status", "locked").out,
            "CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n");
  auto r = Exec("users", "touch /x", "locked");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("Read-only file system"));
  EXPECT_EQ(Exec("users", "touch /tmp/x && echo ok", "locked").out, "ok\n");
  // runAsNonRoot with root named: the container is never made.
  CreatePod("rooted", R"(  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    securityContext: {runAsUser: 0, runAsNonRoot: true}
)");
  ASSERT_TRUE(Eventually([&] {
    auto p = GetPod("rooted");
    return p.ok() && p->status().container_statuses_size() == 1 &&
           p->status().container_statuses(0).state().waiting().reason() ==
               "CreateContainerConfigError";
  }));
  const api::Pod rooted = *GetPod("rooted");
  EXPECT_EQ(rooted.status().container_statuses(0).state().waiting().message(),
            fmt::format("container's runAsUser breaks non-root policy (pod: \"rooted_{}({})\", "
                        "container: main)",
                        rooted.metadata().namespace_(), rooted.metadata().uid()));
  Ctl({"delete", "pod", "users", "rooted", "--grace-period=0"});
}

// As in Kubernetes, a container may change its image's files and the system's (file modes
// allowing): in a layer of its own, gone when it starts again, seen by no other container.
TEST_F(IsolationTest, TheRootIsWritableInALayerOfTheContainersOwn) {
  const std::string host_file = "/usr/bin/mkube-layer-test";
  ASSERT_FALSE(std::filesystem::exists(host_file));
  CreatePod("layered", R"(  containers:
  - name: main
    image: tools:v1
    command: ["sh", "-c", "[ -e /usr/bin/mkube-layer-test ] && echo KEPT; echo > /usr/bin/mkube-layer-test; echo started; exec sleep 3600"]
    securityContext: {runAsUser: 0}
  - name: other
    image: tools:v1
    command: ["sleep", "3600"]
)");
  ASSERT_TRUE(Eventually([&] { return Logs("layered", "main") == "started\n"; }));
  auto r = Exec("layered",
                "echo changed > /bin/greet && cat /bin/greet && echo new > /etc/motd && "
                "cat /etc/motd && ls -a / | grep -c image.json",
                "main");
  EXPECT_EQ(r.out, "changed\nnew\n0\n") << r.err;
  // The node's files, the image's and the other container's view are untouched.
  EXPECT_FALSE(std::filesystem::exists(host_file));
  for (const auto& layer :
       std::filesystem::directory_iterator(Node01().root() + "/oci/layers/sha256")) {
    EXPECT_FALSE(std::filesystem::exists(layer.path() / "usr/bin/mkube-layer-test")) << layer;
    EXPECT_FALSE(std::filesystem::exists(layer.path() / "etc/motd")) << layer;
  }
  EXPECT_THAT(Exec("layered", "cat /bin/greet", "other").out, HasSubstr("$GREETING"));
  EXPECT_NE(Exec("layered", "ls /usr/bin/mkube-layer-test", "other").exit_code, 0);
  // Started again, the container begins from its image.
  // The shell that kills the program may itself go with the container's PID namespace (137)
  // before it exits: either way the program was killed.
  const int killed = Exec("layered", "kill 2", "main").exit_code;
  ASSERT_TRUE(killed == 0 || killed == 128 + SIGKILL) << killed;
  ASSERT_TRUE(Eventually(
      [&] {
        auto p = GetPod("layered");
        return p.ok() && p->status().container_statuses_size() == 2 &&
               p->status().container_statuses(0).restart_count() >= 1 &&
               p->status().container_statuses(0).state().has_running() &&
               Logs("layered", "main") == "started\n";
      },
      std::chrono::seconds(30)));
  EXPECT_THAT(Exec("layered", "cat /bin/greet", "main").out, HasSubstr("$GREETING"));
  Ctl({"delete", "pod", "layered", "--grace-period=0"});
}

// An image's links are followed inside the container's root only, also while the agent builds
// it: files it writes there (/etc/hostname, /etc/hosts) never reach the node's through them.
TEST_F(IsolationTest, AnImagesLinksCannotLeadTheRootsMakingOntoTheNode) {
  namespace fs = std::filesystem;
  const std::string victim = cluster_->dir().path() + "/victim",
                    spec = cluster_->dir().path() + "/hostile.json",
                    archive = cluster_->dir().path() + "/hostile.tar";
  std::ofstream(victim) << "the node's\n";
  // An image whose /etc/hostname and /etc/hosts lead to the node's file (absolutely, and by
  // climbing) and whose /data is a folder of the node's.
  std::ofstream(spec) << nlohmann::json::array(
      {{{"name", "hostile:v1"},
        {"files", {{{"from", "${BUSYBOX}"}, {"to", "/bin/busybox"}, {"libraries", true}}}},
        {"busybox", "/bin/busybox"},
        {"links",
         {{"/etc/hostname", victim},
          {"/etc/hosts", "../../../../../../../../../.." + victim},
          {"/data", fs::path(victim).parent_path().string()}}},
        {"config", {{"Cmd", {"sleep", "3600"}}, {"Env", {"PATH=/usr/bin:/bin"}}}}}});
  auto built = RunCommand({BinDir() + "/mkube-image-build", "--spec", spec, "--set",
                           "BUSYBOX=" + fs::canonical("/bin/busybox").string(), "--out", archive});
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  auto loaded = Ctl({"image", "load", archive, "--nodes", "node01"});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  CreatePod("hostile", R"(  containers:
  - name: main
    image: hostile:v1
    imagePullPolicy: Never
    securityContext: {runAsUser: 0}
)");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("hostile", "Running"); }));
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "the node's\n");
  // Inside, the links lead to the container's own files.
  auto r =
      Exec("hostile", fmt::format("cat /etc/hostname; ls /data/ 2>&1 | head -1; cat {}", victim));
  EXPECT_THAT(r.out, ::testing::StartsWith("hostile\n")) << r.err;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("the node's"))) << r.err;
  Ctl({"delete", "pod", "hostile", "--grace-period=0"});
}

TEST_F(IsolationTest, AnImagesUserNamedIsFoundInTheImagesOwnFiles) {
  CreatePod("named", R"(  containers:
  - name: main
    image: appuser:v1
)");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("named", "Running"); }));
  auto r = Exec("named", "id -u; id -g; id -G; id -un");
  EXPECT_EQ(r.out, "1500\n1600\n1600 50\napp\n") << r.err;
  Ctl({"delete", "pod", "named", "--grace-period=0"});
}

TEST_F(IsolationTest, ThePodsContainersShareAnEmptyDir) {
  CreatePod("pair", R"(  volumes: [{name: shared, emptyDir: {}}]
  containers:
  - name: writer
    image: busybox
    command: ["sh", "-c", "echo hello from writer > /out/msg; sleep 3600"]
    volumeMounts: [{name: shared, mountPath: /out}]
  - name: reader
    image: busybox
    command: ["sh", "-c", "until [ -s /in/msg ]; do sleep 0.1; done; cat /in/msg; sleep 3600"]
    volumeMounts: [{name: shared, mountPath: /in, readOnly: true}]
)");
  ASSERT_TRUE(Eventually([&] { return Logs("pair", "reader") == "hello from writer\n"; }));
  auto r = Exec("pair", "echo no > /in/other", "reader");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("Read-only file system"));
  Ctl({"delete", "pod", "pair", "--grace-period=0"});
}

TEST_F(IsolationTest, AnAgentKilledAndRestartedStillEntersItsContainers) {
  api::Pod pod = CreatePod("kept", R"(  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo $$ > /tmp/pid; sleep 3600"]
)");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("kept", "Running"); }));
  const std::string before = Exec("kept", "cat /tmp/pid").out;
  ASSERT_FALSE(before.empty());
  Node01().Kill9();
  ASSERT_TRUE(Node01().Start().ok());
  auto r = Exec("kept", "cat /tmp/pid; hostname; id -u");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, before + "kept\n65534\n");
  Ctl({"delete", "pod", "kept", "--grace-period=0"});
}

TEST_F(IsolationTest, ContainersSeeEachOthersProcessesOnlyWhenThePodSharesItsNamespace) {
  const std::string two = R"(  containers:
  - {name: a, image: busybox, command: [sleep, '601']}
  - {name: b, image: busybox, command: [sleep, '602']}
)";
  CreatePod("apart", two);
  CreatePod("shared", "  shareProcessNamespace: true\n" + two);
  ASSERT_TRUE(Eventually(
      [&] { return PodPhaseIs("apart", "Running") && PodPhaseIs("shared", "Running"); }));
  const std::string list =
      "cat /proc/1/comm; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done";
  // Apart: b sees its own init and program only.
  std::string out = Exec("apart", list, "b").out;
  EXPECT_THAT(out, ::testing::StartsWith("mkube-init\n"));
  EXPECT_THAT(out, HasSubstr("sleep 602"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("sleep 601")));
  // Shared: the pod's pause is pid 1, and both programs are there.
  out = Exec("shared", list, "b").out;
  EXPECT_THAT(out, ::testing::StartsWith("pause\n"));
  EXPECT_THAT(out, HasSubstr("sleep 601"));
  EXPECT_THAT(out, HasSubstr("sleep 602"));
  // Deleted, nothing of it is left on the node.
  api::Pod shared = *GetPod("shared");
  const Processes a = ProcessesOf(shared, "a");
  EXPECT_EQ(Ctl({"delete", "pod", "apart", "shared", "--grace-period=0"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return AllGone(a); }));
}

// The pause process that holds a shared PID namespace is adopted by an agent started again:
// a container the new agent starts joins the same namespace, and deleting the pod ends it.
TEST_F(IsolationTest, ASharedNamespaceOutlivesAnAgentRestart) {
  api::Pod pod = CreatePod("shared-kept", R"(  shareProcessNamespace: true
  containers:
  - {name: a, image: busybox, command: [sleep, '611']}
  - {name: b, image: busybox, command: [sleep, '612']}
)");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("shared-kept", "Running"); }));
  auto pause_pid = [&] {
    std::ifstream in(Sandbox(pod) + "/pause.pid");
    auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    return j.is_object() ? j.value("pid", pid_t{-1}) : pid_t{-1};
  };
  const pid_t pause = pause_pid();
  ASSERT_GT(pause, 0);
  const Processes b = ProcessesOf(pod, "b");
  Node01().Kill9();
  ASSERT_TRUE(Node01().Start().ok());
  // b ends a's program (it sees it: one namespace); the new agent starts a again.
  auto r = Exec("shared-kept",
                "for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = sleep ] && "
                "grep -q 611 $p/cmdline && kill ${p#/proc/}; done; echo ok",
                "b");
  ASSERT_EQ(r.out, "ok\n") << r.err;
  ASSERT_TRUE(Eventually(
      [&] {
        auto p = GetPod("shared-kept");
        return p.ok() && p->status().container_statuses_size() == 2 &&
               p->status().container_statuses(0).restart_count() >= 1 &&
               p->status().container_statuses(0).state().has_running();
      },
      std::chrono::seconds(30)));
  const Processes a = ProcessesOf(pod, "a", nullptr, 1);
  EXPECT_EQ(pause_pid(), pause) << "the same pause, adopted";
  EXPECT_EQ(a.pid_ns, b.pid_ns) << "the restarted container joined the pod's namespace";
  const std::string out =
      Exec("shared-kept",
           "cat /proc/1/comm; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done", "b")
          .out;
  EXPECT_THAT(out, ::testing::StartsWith("pause\n"));
  EXPECT_THAT(out, HasSubstr("sleep 611"));
  EXPECT_EQ(Ctl({"delete", "pod", "shared-kept", "--grace-period=0"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return AllGone(a) && AllGone(b) && ProcessGone(pause); }));
}

TEST_F(IsolationTest, AnAgentThatIsNotRootRunsPodsAndSaysWhatIsMissing) {
  // The same agent as nobody: no namespaces, users or cgroups are its to use.
  namespace fs = std::filesystem;
  AgentProcess::Options o = cluster_->AgentOptions("master01");
  // Its folder outside the suite's (which only root may enter), removed at the end.
  TempDir own;
  o.dir = own.Sub("master01");
  ASSERT_EQ(chmod(own.path().c_str(), 0755), 0);
  if (!fs::exists("/usr/bin/setpriv")) GTEST_SKIP() << "no setpriv (util-linux) here";
  o.wrapper = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  fs::create_directories(o.dir);
  fs::copy_file(o.agent_token_file, o.dir + "/agent.token");
  o.agent_token_file = o.dir + "/agent.token";
  ASSERT_EQ(RunCommand({"chown", "-R", "65534:65534", o.dir}).exit_code, 0);
  AgentProcess nobody(o);
  ASSERT_TRUE(nobody.Start().ok()) << nobody.log();
  auto node = client()->Get<api::Node>("nodes", "", "master01");
  ASSERT_TRUE(node.ok());
  const std::string said = node->metadata().annotations().at("mkube.io/isolation");
  EXPECT_THAT(said, ::testing::StartsWith("none; missing: own root filesystem"));
  EXPECT_THAT(said, HasSubstr("users (containers run as the agent's user)"));
  EXPECT_THAT(said, HasSubstr("memory limits"));
  EXPECT_THAT(nobody.log(), HasSubstr("containers are not protected here by: users"));
  auto r = Ctl({"create", "-f", "-"}, R"(apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  nodeName: master01
  restartPolicy: Never
  containers:
  - {name: main, image: busybox, command: [sh, -c, 'id -u; echo ran']}
)");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(
      Eventually([&] { return PodPhaseIs("plain", "Succeeded"); }, std::chrono::seconds(20)));
  EXPECT_EQ(Logs("plain"), "65534\nran\n");
  Ctl({"delete", "pod", "plain"});
  nobody.Stop();
}

TEST_F(IsolationTest, AMemoryHogIsOOMKilledAndRestarted) {
  if (!Cgroups("memory")) GTEST_SKIP() << "no memory cgroup here";
  CreatePod("hog", R"(  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exec tail /dev/zero"]
    resources: {limits: {memory: 32Mi}}
)");
  ASSERT_TRUE(Eventually(
      [&] {
        auto p = GetPod("hog");
        return p.ok() && p->status().container_statuses_size() == 1 &&
               p->status().container_statuses(0).restart_count() >= 1 &&
               p->status().container_statuses(0).last_state().has_terminated();
      },
      std::chrono::seconds(30)));
  const auto st = GetPod("hog")->status();
  EXPECT_EQ(st.container_statuses(0).last_state().terminated().reason(), "OOMKilled");
  EXPECT_EQ(st.container_statuses(0).last_state().terminated().exit_code(), 137);
  EXPECT_EQ(st.qos_class(), "Burstable");
  EXPECT_THAT(Ctl({"describe", "pod", "hog"}).out, ::testing::ContainsRegex("Reason: +OOMKilled"));
  Ctl({"delete", "pod", "hog", "--grace-period=0"});
}

TEST_F(IsolationTest, ACpuLimitedBusyLoopGetsAboutItsQuota) {
  if (!Cgroups("cpu")) GTEST_SKIP() << "no cpu cgroup here";
  api::Pod pod = CreatePod("spin", R"(  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "while :; do :; done"]
    resources: {requests: {cpu: 200m, memory: 16Mi}, limits: {cpu: 200m, memory: 16Mi}}
)");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("spin", "Running"); }));
  EXPECT_EQ(GetPod("spin")->status().qos_class(), "Guaranteed");
  const std::string cpu = Cgroup(pod, "main", "cpu");
  ASSERT_FALSE(cpu.empty());
  EXPECT_EQ(ReadNumber(cpu + "/cpu.cfs_quota_us"), 20000);
  EXPECT_EQ(ReadNumber(cpu + "/cpu.shares"), 204);
  // Over a second and a half the loop gets no more than its quota. (How much less depends on
  // what else the machine runs, so only the ceiling is checked.)
  const Processes procs = ProcessesOf(pod, "main");
  auto used = [&] {
    int64_t ticks = 0;
    for (const auto& stat : StatsOf(procs)) {
      long utime = 0, stime = 0;
      if (std::sscanf(stat.c_str(), "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime,
                      &stime) == 2) {
        ticks += utime + stime;
      }
    }
    return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
  };
  const double before = used();
  const auto began = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a span to measure, not a wait
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const double cores = (used() - before) / seconds;
  EXPECT_LT(cores, 0.35);  // its quota is 0.2 of a core; unlimited it would take a whole one
  EXPECT_GT(ReadNumber(cpu + "/cpu.stat", "nr_periods"), 0);  // the quota is in force
  Ctl({"delete", "pod", "spin", "--grace-period=0"});
}

TEST_F(IsolationTest, AForkBombStopsAtThePodsPidsLimit) {
  if (!Cgroups("pids")) GTEST_SKIP() << "no pids cgroup here";
  api::Pod pod = CreatePod("bomb", R"(  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "while :; do sleep 600 & done"]
)");
  ASSERT_TRUE(Eventually([&] { return !Cgroup(pod, "main", "pids").empty(); }));
  const std::string pids = Cgroup(pod, "main", "pids");
  EXPECT_EQ(ReadNumber(pids + "/pids.max"), 64);
  // Forks were refused at the limit (the kernel counts each), never above it.
  ASSERT_TRUE(Eventually([&] { return ReadNumber(pids + "/pids.events", "max") > 0; }));
  EXPECT_LE(ReadNumber(pids + "/pids.current"), 64);
  // The node goes on: another pod starts and answers exec.
  CreatePod("after", "  containers:\n  - {name: main, image: busybox, command: [sleep, '600']}\n");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("after", "Running"); }));
  EXPECT_EQ(Exec("after", "echo fine").out, "fine\n");
  EXPECT_EQ(Ctl({"delete", "pod", "bomb", "after", "--grace-period=0"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return !std::filesystem::exists(pids); }));
}

}  // namespace
}  // namespace mkube::testing
