// The real mkube-agent under a real apiserver and store: node registration and lease, pods run
// as processes through their whole lifecycle (agent_streams_test.cc: their logs and exec).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_split.h"
#include "client/client.h"
#include "fmt/format.h"
#include "proto/agent/agent.grpc.pb.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"
#include "tests/integration/agent_fixture.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST_F(AgentTest, RegistersTheNodeAndItsLease) {
  auto node = client()->Get<api::Node>("nodes", "", "node01");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->metadata().labels().at("kubernetes.io/hostname"), "node01");
  bool ready = false;
  for (const auto& c : node->status().conditions()) ready |= c.type() == "Ready" && c.status() == "True";
  EXPECT_TRUE(ready);
  ASSERT_EQ(node->status().addresses_size(), 2);
  EXPECT_EQ(node->status().addresses(0).type(), "InternalIP");
  EXPECT_EQ(node->status().addresses(0).address(), "127.0.0.1");
  const std::string agent_port = Node01().address().substr(Node01().address().rfind(':') + 1);
  EXPECT_EQ(std::to_string(node->status().daemon_endpoints().kubelet_endpoint().port()), agent_port);
  EXPECT_FALSE(node->status().capacity().at("cpu").empty());
  auto lease = client()->Get<api::Lease>("leases", "kube-node-lease", "node01");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->spec().holder_identity(), "node01");
  EXPECT_FALSE(lease->spec().renew_time().empty());

  ASSERT_TRUE(Eventually([&] {
    return Ctl({"describe", "node", "node01"}).out.find("Node node01 status is now: NodeReady") != std::string::npos;
  }));
  EXPECT_THAT(Ctl({"describe", "node", "node01"}).out,
              ::testing::ContainsRegex("Normal +Starting +[0-9a-z]+ +kubelet +Starting kubelet\\."));
  auto r = Ctl({"get", "nodes"});
  EXPECT_THAT(r.out, ::testing::MatchesRegex("NAME +STATUS +ROLES +AGE +VERSION\nnode01 +Ready +<none> +[0-9a-z]+ +v0\\.1\\.0\n"));
}

TEST_F(AgentTest, GetWatchShowsThePodGoThroughContainerCreating) {
  const std::string out = cluster_->dir().Sub("watch.out");
  Subprocess watch({BinDir() + "/mkubectl", "get", "pods", "-w"}, out,
                   {{"MKUBECONFIG", cluster_->kubeconfig()}});
  ASSERT_TRUE(Eventually([&] { return ReadFile(out).find("NAME") != std::string::npos ||
                                      ReadFile(out).find("No resources") != std::string::npos; }));
  CreatePod("watched", "  containers:\n  - {name: c, image: busybox, command: [sleep, '100']}\n");
  ASSERT_TRUE(Eventually([&] { return ReadFile(out).find("watched   1/1     Running") != std::string::npos; }))
      << ReadFile(out);
  EXPECT_THAT(ReadFile(out), ::testing::ContainsRegex(
      "watched +0/1 +Pending +0 +[0-9a-z]+\n"
      "watched +0/1 +ContainerCreating +0 +[0-9a-z]+\n"
      "watched +1/1 +Running +0 +[0-9a-z]+\n"));
  watch.Kill();
  EXPECT_EQ(Ctl({"delete", "pod", "watched", "--grace-period", "0", "--force"}).exit_code, 0);
}

TEST_F(AgentTest, ContainersThatExitEndThePodByItsRestartPolicy) {
  CreatePod("ok", "  restartPolicy: Never\n  containers:\n  - {name: c, image: busybox, command: [sh, -c, 'echo fine']}\n");
  CreatePod("bad", "  restartPolicy: Never\n  containers:\n  - {name: c, image: busybox, command: [sh, -c, 'echo broken; exit 3']}\n");
  CreatePod("onfail", "  restartPolicy: OnFailure\n  containers:\n  - {name: c, image: busybox, command: [sh, -c, 'exit 0']}\n");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("ok", "Succeeded"); }));
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("bad", "Failed"); }));
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("onfail", "Succeeded"); }));
  auto bad = GetPod("bad");
  ASSERT_TRUE(bad.ok());
  const auto& t = bad->status().container_statuses(0).state().terminated();
  EXPECT_EQ(t.exit_code(), 3);
  EXPECT_EQ(t.reason(), "Error");
  EXPECT_EQ(bad->status().container_statuses(0).restart_count(), 0);
  auto table = Ctl({"get", "pods", "ok", "bad"}).out;
  EXPECT_THAT(table, ::testing::ContainsRegex("ok +0/1 +Completed +0 "));
  EXPECT_THAT(table, ::testing::ContainsRegex("bad +0/1 +Error +0 "));
  EXPECT_EQ(Ctl({"logs", "bad"}).out, "broken\n");
  auto r = Ctl({"exec", "bad", "--", "true"});
  EXPECT_EQ(r.err, "error: cannot exec into a container in a completed pod; current phase is Failed\n");
  // A finished pod is removed at once: nothing runs to stop.
  EXPECT_EQ(Ctl({"delete", "pod", "ok", "bad", "onfail"}).exit_code, 0);
  EXPECT_TRUE(PodGone("ok") && PodGone("bad") && PodGone("onfail"));
}

TEST_F(AgentTest, ACrashingContainerIsRestartedWithBackOff) {
  CreatePod("crash", "  containers:\n  - {name: c, image: busybox, command: [sh, -c, 'echo run; exit 1']}\n");
  ASSERT_TRUE(Eventually([&] {
    auto p = GetPod("crash");
    return p.ok() && p->status().container_statuses_size() == 1 &&
           p->status().container_statuses(0).state().waiting().reason() == "CrashLoopBackOff";
  }));
  auto p = GetPod("crash");
  ASSERT_TRUE(p.ok());
  const auto& cs = p->status().container_statuses(0);
  EXPECT_EQ(cs.restart_count(), 1);  // the first restart is immediate, the next waits 10 s
  EXPECT_EQ(cs.last_state().terminated().exit_code(), 1);
  EXPECT_THAT(cs.state().waiting().message(), StartsWith("back-off 10s restarting failed container=c pod=crash_default("));
  EXPECT_EQ(p->status().phase(), "Running");
  EXPECT_THAT(Ctl({"get", "pod", "crash"}).out, ::testing::ContainsRegex("crash +0/1 +CrashLoopBackOff +1 \\([0-9a-z]+ ago\\) "));
  ASSERT_TRUE(Eventually([&] {
    return Ctl({"describe", "pod", "crash"}).out.find("Back-off restarting failed container c in pod crash_default(") != std::string::npos;
  }));
  EXPECT_EQ(Ctl({"logs", "crash"}).out, "run\n");
  EXPECT_EQ(Ctl({"logs", "crash", "--previous"}).out, "run\n");
  auto r = Ctl({"delete", "pod", "crash"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(AgentTest, AMissingImageIsErrImagePullThenImagePullBackOff) {
  // An image from a registry that is not there (nothing listens on
  // loopback's port 9): the pull fails at once, whatever the machine's network.
  CreatePod("noimage", "  containers:\n  - {name: c, image: '127.0.0.1:9/nosuch/image:v9'}\n");
  ASSERT_TRUE(Eventually([&] {
    auto p = GetPod("noimage");
    return p.ok() && p->status().container_statuses_size() == 1 &&
           p->status().container_statuses(0).state().waiting().reason() == "ErrImagePull";
  }));
  ASSERT_TRUE(Eventually([&] {
    auto p = GetPod("noimage");
    return p.ok() && p->status().container_statuses(0).state().waiting().reason() == "ImagePullBackOff";
  }));
  auto p = GetPod("noimage");
  EXPECT_EQ(p->status().phase(), "Pending");
  EXPECT_EQ(p->status().container_statuses(0).state().waiting().message(),
            "Back-off pulling image \"127.0.0.1:9/nosuch/image:v9\"");
  ASSERT_TRUE(Eventually([&] {
    const std::string d = Ctl({"describe", "pod", "noimage"}).out;
    return d.find("Failed to pull image \"127.0.0.1:9/nosuch/image:v9\": cannot get "
                  "https://127.0.0.1:9/v2/nosuch/image/manifests/v9: ") != std::string::npos &&
           d.find("Error: ImagePullBackOff") != std::string::npos;
  }));
  auto r = Ctl({"logs", "noimage"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error from server (BadRequest): container \"c\" in pod \"noimage\" is waiting to start: ImagePullBackOff\n");
  EXPECT_EQ(Ctl({"delete", "pod", "noimage"}).exit_code, 0);
}

TEST_F(AgentTest, ImagesArePulledAndTheirEntrypointCmdAndEnvUsed) {
  CreatePod("tools", "  restartPolicy: Never\n  containers:\n  - {name: a, image: 'tools:v1'}\n  - {name: b, image: 'docker.io/library/tools:v1', args: [mkube]}\n");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("tools", "Succeeded"); }))
      << Ctl({"describe", "pod", "tools"}).out;
  // The image is the root of a container's own filesystem, where the host offers one; else
  // its layers are applied into a folder of the node's.
  const auto from_image = [&](const std::string& said) -> ::testing::Matcher<std::string> {
    if (Isolated()) return ::testing::Eq(said + " from /\n");
    return ::testing::StartsWith(said + " from " + Node01().root() + "/oci/roots/");
  };
  EXPECT_THAT(Ctl({"logs", "tools", "-c", "a"}).out, from_image("hello world"));
  auto r = Ctl({"logs", "tools", "-c", "b"});
  EXPECT_THAT(r.out, from_image("hello mkube"));
  r = Ctl({"logs", "tools"});
  EXPECT_EQ(r.err, "Defaulted container \"a\" out of: a, b\n");
  auto node = client()->Get<api::Node>("nodes", "", "node01");
  ASSERT_TRUE(Eventually([&] {
    node = client()->Get<api::Node>("nodes", "", "node01");
    for (const auto& img : node->status().images()) {
      if (img.names(0) == "tools:v1") return true;
    }
    return false;
  }));
  EXPECT_EQ(Ctl({"delete", "pod", "tools"}).exit_code, 0);
}

TEST_F(AgentTest, AContainerThatIgnoresSigtermIsKilledAfterTheGracePeriod) {
  api::Pod pod = CreatePod("stubborn", R"(  terminationGracePeriodSeconds: 1
  volumes: [{name: work, emptyDir: {}}]
  containers:
  - name: c
    image: busybox
    workingDir: /work
    volumeMounts: [{name: work, mountPath: /work}]
    command: ["sh", "-c", "trap '' TERM; echo $$ > c.pid; sleep 100 & echo $! > child.pid; wait; wait"]
)");
  // The shell has written its child's pid, and the agent has recorded the container's.
  ASSERT_TRUE(Eventually(
      [&] { return ReadPid(PodRoot(pod) + "/child.pid") > 0 && ProcessesOf(pod, "c").first > 0; }));
  const Processes c = ProcessesOf(pod, "c");
  auto r = Ctl({"delete", "pod", "stubborn"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(PodGone("stubborn"));
  // The whole container goes, the processes it started included.
  EXPECT_TRUE(Eventually([&] { return AllGone(c); }));
}

TEST_F(AgentTest, DrainEvictsThePodsAndWaitsUntilTheirNodeHasStoppedThem) {
  api::Pod pod = CreatePod("evictee", R"(  volumes: [{name: work, emptyDir: {}}]
  containers:
  - name: c
    image: busybox
    workingDir: /work
    volumeMounts: [{name: work, mountPath: /work}]
    command: ["sh", "-c", "echo $$ > c.pid; trap 'exit 0' TERM; while true; do sleep 0.1; done"]
)");
  ASSERT_TRUE(Eventually([&] { return ReadPid(PodRoot(pod) + "/c.pid") > 0; }));
  const Processes c = ProcessesOf(pod, "c");
  auto r = Ctl({"drain", "node01", "--ignore-daemonsets", "--delete-emptydir-data"});
  EXPECT_EQ(r.exit_code, 1);  // a pod without a controller needs --force
  EXPECT_THAT(r.err, HasSubstr("cannot delete Pods declare no controller (use --force to override): default/evictee"));
  r = Ctl({"drain", "node01", "--ignore-daemonsets", "--delete-emptydir-data", "--force",
           "--timeout", "60s"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("evicting pod default/evictee\n"));
  EXPECT_THAT(r.out, HasSubstr("pod/evictee evicted\nnode/node01 drained\n"));
  EXPECT_TRUE(PodGone("evictee"));
  EXPECT_TRUE(Eventually([&] { return AllGone(c); }));
  EXPECT_THAT(Ctl({"get", "nodes"}).out, ::testing::ContainsRegex("node01 +Ready,SchedulingDisabled "));
  EXPECT_EQ(Ctl({"uncordon", "node01"}).out, "node/node01 uncordoned\n");
}

TEST_F(AgentTest, ReadinessProbesGateReadyAndLivenessProbesRestart) {
  api::Pod pod = CreatePod("probed", R"(  volumes: [{name: work, emptyDir: {}}]
  containers:
  - name: exec
    image: busybox
    command: ["sleep", "100"]
    workingDir: /work
    volumeMounts: [{name: work, mountPath: /work}]
    readinessProbe:
      exec: {command: ["test", "-f", "ready"]}
      periodSeconds: 1
      failureThreshold: 1
  - name: http
    image: web:v1
    ports: [{name: web, containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /, port: web}
      periodSeconds: 1
  - name: http404
    image: web:v1
    env: [{name: PORT, value: "8081"}]
    readinessProbe:
      httpGet: {path: /nope, port: 8081}
      periodSeconds: 1
)");
  auto ready = [&](const std::string& container) {
    auto p = GetPod("probed");
    if (!p.ok()) return false;
    for (const auto& cs : p->status().container_statuses()) {
      if (cs.name() == container) return cs.ready();
    }
    return false;
  };
  ASSERT_TRUE(Eventually([&] { return ready("http"); }));
  EXPECT_FALSE(ready("exec"));
  EXPECT_FALSE(ready("http404"));
  EXPECT_THAT(Ctl({"get", "pod", "probed"}).out, ::testing::ContainsRegex("probed +1/3 +Running "));
  std::ofstream(PodRoot(pod) + "/ready") << "";
  ASSERT_TRUE(Eventually([&] { return ready("exec"); }));
  std::filesystem::remove(PodRoot(pod) + "/ready");
  ASSERT_TRUE(Eventually([&] { return !ready("exec"); }));
  ASSERT_TRUE(Eventually([&] {
    const std::string d = Ctl({"describe", "pod", "probed"}).out;
    return d.find("Readiness probe failed: command exited with 1") != std::string::npos &&
           d.find("Readiness probe failed: HTTP probe failed with statuscode: 404") != std::string::npos;
  }));
  EXPECT_EQ(GetPod("probed")->status().phase(), "Running");
  EXPECT_EQ(Ctl({"delete", "pod", "probed", "--grace-period", "0", "--force"}).exit_code, 0);

  // Nothing listens on the liveness probe's port: the container is killed and restarted.
  CreatePod("unlive", R"(  containers:
  - name: c
    image: busybox
    command: ["sleep", "100"]
    livenessProbe:
      tcpSocket: {port: 9}
      periodSeconds: 1
      failureThreshold: 2
)");
  ASSERT_TRUE(Eventually([&] {
    auto p = GetPod("unlive");
    return p.ok() && p->status().container_statuses_size() == 1 &&
           p->status().container_statuses(0).restart_count() >= 1;
  }, std::chrono::seconds(20)));
  ASSERT_TRUE(Eventually([&] {
    const std::string d = Ctl({"describe", "pod", "unlive"}).out;
    return d.find("Container c failed liveness probe, will be restarted") != std::string::npos &&
           d.find("Liveness probe failed: dial tcp " + cluster_->PodPrefix("node01")) !=
               std::string::npos;
  }));
  EXPECT_EQ(Ctl({"delete", "pod", "unlive", "--grace-period", "0", "--force"}).exit_code, 0);
}

TEST_F(AgentTest, AnAgentKilledWithSigkillAdoptsItsContainersWhenRestarted) {
  AgentProcess agent(cluster_->AgentOptions("node02"));
  ASSERT_TRUE(agent.Start().ok());
  auto create = [&](const std::string& name, const std::string& policy, const std::string& cmd) {
    const std::string yaml = fmt::format(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {}}}\nspec:\n  nodeName: node02\n"
        "  restartPolicy: {}\n{}  containers:\n  - name: c\n    image: busybox\n"
        "    command: [sh, -c, '{}']\n{}",
        name, policy, kWorkVolume, cmd, kWorkMount);
    auto r = Ctl({"create", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  create("survivor", "Always", "echo start >> starts; echo $$ > c.pid; exec sleep 100");
  create("finisher", "Never", "echo $$ > c.pid; while [ ! -f go ]; do sleep 0.05; done; exit 4");
  create("ghost", "Always", "echo $$ > c.pid; exec sleep 100");
  std::map<std::string, std::string> roots;
  std::map<std::string, pid_t> pids;
  std::map<std::string, Processes> procs;
  for (const std::string name : {"survivor", "finisher", "ghost"}) {
    ASSERT_TRUE(Eventually([&] { return PodPhaseIs(name, "Running"); })) << name;
    auto pod = GetPod(name);
    roots[name] = PodRoot(*pod, &agent);
    ASSERT_TRUE(Eventually([&] { return ReadPid(roots[name] + "/c.pid") > 0; })) << name;
    procs[name] = ProcessesOf(*pod, "c", &agent);
    pids[name] = procs[name].first;
  }

  agent.Kill9();
  // The containers outlive the agent. Meanwhile one ends and one pod is deleted outright.
  EXPECT_FALSE(ProcessGone(pids["survivor"]));
  std::ofstream(roots["finisher"] + "/go") << "";
  ASSERT_TRUE(Eventually([&] { return ProcessGone(pids["finisher"]); }));
  auto r = Ctl({"delete", "pod", "ghost", "--grace-period", "0", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(ProcessGone(pids["ghost"]));

  ASSERT_TRUE(agent.Start().ok());
  // The ended container is reported as it ended; the deleted pod's process is stopped.
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("finisher", "Failed"); }));
  auto finisher = GetPod("finisher");
  EXPECT_EQ(finisher->status().container_statuses(0).state().terminated().exit_code(), 4);
  EXPECT_EQ(finisher->status().container_statuses(0).restart_count(), 0);
  EXPECT_TRUE(Eventually([&] { return ProcessGone(pids["ghost"]); }));
  EXPECT_TRUE(Eventually([&] { return !std::filesystem::exists(roots["ghost"]); }));
  // The running one is the same process, started once, through a few of the agent's rounds,
  // still served by logs and exec.
  EXPECT_TRUE(Consistently(
      [&] {
        return !ProcessGone(pids["survivor"]) &&
               ReadFile(roots["survivor"] + "/starts") == "start\n";
      },
      std::chrono::milliseconds(500)));
  EXPECT_FALSE(ProcessGone(pids["survivor"]));
  EXPECT_EQ(ReadFile(roots["survivor"] + "/starts"), "start\n");
  auto survivor = GetPod("survivor");
  EXPECT_EQ(survivor->status().phase(), "Running");
  EXPECT_EQ(survivor->status().container_statuses(0).restart_count(), 0);
  r = Ctl({"exec", "survivor", "--", "cat", "c.pid"});
  EXPECT_EQ(r.out, ReadFile(roots["survivor"] + "/c.pid")) << r.err;

  EXPECT_EQ(Ctl({"delete", "pod", "survivor", "finisher"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return AllGone(procs["survivor"]); }));
  agent.Stop();
}

TEST_F(AgentTest, StoppingTheAgentStopsItsContainers) {
  // Last: it stops the suite's agent (a second agent takes its place for node02).
  AgentProcess second(cluster_->AgentOptions("node02"));
  ASSERT_TRUE(second.Start().ok());
  // (Its containers share the pod's PID namespace: its holder goes too.)
  auto yaml =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: sleeper}\nspec:\n  nodeName: node02\n"
      "  shareProcessNamespace: true\n"
      "  containers: [{name: c, image: busybox, command: [sh, -c, 'echo $$ > c.pid; exec sleep "
      "100']}]\n";
  ASSERT_EQ(Ctl({"create", "-f", "-"}, yaml).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("sleeper", "Running"); }));
  auto pod = GetPod("sleeper");
  EXPECT_THAT(pod->status().pod_ip(), StartsWith(cluster_->PodPrefix("node02")));
  ASSERT_TRUE(Eventually([&] { return ProcessesOf(*pod, "c", &second).first > 0; }));
  const Processes c = ProcessesOf(*pod, "c", &second);
  second.Stop();
  EXPECT_TRUE(AllGone(c));
}

}  // namespace
}  // namespace mkube::testing
