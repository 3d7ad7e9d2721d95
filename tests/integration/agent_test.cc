// The real mkube-agent under a real apiserver and store: node registration and lease, pods run
// as processes through their whole lifecycle, and `mkubectl logs` / `exec` through the
// apiserver to the agent.
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

TEST_F(AgentTest, RunsAPodAndServesItsLogsAndExec) {
  api::Pod pod = CreatePod("web", R"(  volumes: [{name: work, emptyDir: {}}]
  containers:
  - name: main
    image: busybox
    env: [{name: WHO, value: web}]
    workingDir: /work
    volumeMounts: [{name: work, mountPath: /work}]
    command: ["sh", "-c", "echo $$ > main.pid; echo started $WHO at $POD_IP; trap 'echo bye; exit 0' TERM; while true; do sleep 0.1; done"]
)");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("web", "Running"); }));
  auto running = GetPod("web");
  ASSERT_TRUE(running.ok());
  const auto& st = running->status();
  EXPECT_EQ(st.host_ip(), "127.0.0.1");
  EXPECT_THAT(st.pod_ip(), StartsWith(cluster_->PodPrefix("node01")));
  ASSERT_EQ(st.container_statuses_size(), 1);
  EXPECT_TRUE(st.container_statuses(0).state().has_running());
  EXPECT_TRUE(st.container_statuses(0).ready());
  EXPECT_EQ(st.container_statuses(0).image_id(), "busybox:latest");
  EXPECT_THAT(Ctl({"get", "pod", "web"}).out, ::testing::ContainsRegex("web +1/1 +Running +0 "));
  // The kubelet's events, as describe shows them.
  ASSERT_TRUE(Eventually([&] {
    return Ctl({"describe", "pod", "web"}).out.find("Started container main") != std::string::npos;
  }));
  const std::string described = Ctl({"describe", "pod", "web"}).out;
  EXPECT_THAT(described, ::testing::ContainsRegex("Normal +Pulling +[0-9a-z]+ +kubelet +Pulling image \"busybox\""));
  EXPECT_THAT(described, ::testing::ContainsRegex("Normal +Pulled +[0-9a-z]+ +kubelet +Successfully pulled image \"busybox\" in "));
  EXPECT_THAT(described, ::testing::ContainsRegex("Normal +Created +[0-9a-z]+ +kubelet +Created container main"));
  // In the order they happened.
  EXPECT_THAT(described, ::testing::ContainsRegex("Pulling image[^$]*Successfully pulled[^$]*Created container[^$]*Started container"));

  ASSERT_TRUE(Eventually([&] { return Ctl({"logs", "web"}).out.find("started web") != std::string::npos; }));
  EXPECT_EQ(Ctl({"logs", "web"}).out, "started web at " + st.pod_ip() + "\n");
  EXPECT_EQ(Ctl({"logs", "pod/web", "--tail", "1"}).out, "started web at " + st.pod_ip() + "\n");
  EXPECT_EQ(Ctl({"logs", "web", "--tail", "0"}).out, "");
  // Each line with when it was written; only what came after a time; at most N bytes.
  EXPECT_THAT(Ctl({"logs", "web", "--timestamps"}).out,
              ::testing::MatchesRegex("20[0-9-]+T[0-9:]+\\.[0-9]{9}Z started web at [0-9.]+\n"));
  EXPECT_EQ(Ctl({"logs", "web", "--since-time", "2100-01-01T00:00:00Z"}).out, "");
  EXPECT_EQ(Ctl({"logs", "web", "--since", "1h"}).out, "started web at " + st.pod_ip() + "\n");
  EXPECT_EQ(Ctl({"logs", "web", "--limit-bytes", "7"}).out, "started");
  EXPECT_NE(Ctl({"logs", "web", "--since", "1h", "--since-time", "2100-01-01T00:00:00Z"}).exit_code, 0);

  // exec: the container's environment and folder, output, stdin, and the exit code.
  auto r = Ctl({"exec", "web", "--", "sh", "-c", "echo $HOSTNAME $WHO; cat main.pid >/dev/null && echo found; echo oops >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "web web\nfound\n");
  EXPECT_EQ(r.err, "oops\ncommand terminated with exit code 3\n");
  r = Ctl({"exec", "-i", "web", "--", "tr", "a-z", "A-Z"}, "from stdin\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "FROM STDIN\n");
  r = Ctl({"exec", "web", "--", "no-such-program"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("executable file not found in $PATH"));
  r = Ctl({"exec", "web", "-c", "other", "--", "true"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("container other is not valid for pod web"));

  // Deleted: SIGTERM reaches the container, which says goodbye; then the object goes.
  const Processes main = ProcessesOf(pod, "main");
  ASSERT_GT(main.first, 0);
  r = Ctl({"delete", "pod", "web"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "pod \"web\" deleted\n");
  EXPECT_TRUE(PodGone("web"));  // delete waits until the node has removed it
  EXPECT_TRUE(Eventually([&] { return AllGone(main); }));
  EXPECT_FALSE(std::filesystem::exists(PodRoot(pod)));
}

TEST_F(AgentTest, LogsFollowStreamsUntilTheContainerStops) {
  CreatePod("talker", "  containers:\n  - {name: c, image: busybox, command: [sh, -c, 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); echo line $i; sleep 0.02; done']}\n");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("talker", "Running"); }));
  const std::string out = cluster_->dir().Sub("follow.out");
  Subprocess follow({BinDir() + "/mkubectl", "logs", "-f", "talker"}, out,
                    {{"MKUBECONFIG", cluster_->kubeconfig()}});
  ASSERT_TRUE(Eventually([&] { return ReadFile(out).find("line 30\n") != std::string::npos; }));
  EXPECT_EQ(Ctl({"delete", "pod", "talker"}).exit_code, 0);
  auto status = follow.Wait(std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value()) << "logs -f did not end with the container";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  // Every line once, in order, none lost between the reads.
  std::vector<std::string> lines = absl::StrSplit(ReadFile(out), '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 30u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i], fmt::format("line {}", i + 1));
}

TEST_F(AgentTest, ExecWithATerminal) {
  CreatePod("term", "  containers:\n  - {name: c, image: busybox, command: [sleep, '100']}\n");
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("term", "Running"); }));
  // Without a terminal on this side, mkubectl says so and runs the command without one.
  auto r = Ctl({"exec", "-it", "term", "--", "sh", "-c", "tty || true"}, "");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "Unable to use a TTY - input is not a terminal or the right kind of file\n");
  EXPECT_EQ(r.out, "not a tty\n");
  // From a terminal, `exec -it ... sh` is an interactive shell (the seeds' troubleshooting
  // step): mkubectl runs under a pseudo-terminal here, types two lines and reads the replies.
  const std::string script = cluster_->dir().Sub("exec_it.py");
  std::ofstream(script) << R"(import os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "exec", "-it", "term", "--", "sh"])
out = b""
def read_until(token):
    global out
    while token not in out:
        r, _, _ = select.select([fd], [], [], 10)
        if not r:
            return
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return
        if not chunk:
            return
        out += chunk
os.write(fd, b"echo hi $((1+2))\r")
read_until(b"hi 3")
os.write(fd, b"exit 5\r")
read_until(b"exit code 5")
_, status = os.waitpid(pid, 0)
sys.stdout.write("status=%d\n" % os.WEXITSTATUS(status))
sys.stdout.write(out.decode(errors="replace"))
)";
  r = RunCommand({"python3", script, BinDir() + "/mkubectl"},
                 {{"MKUBECONFIG", cluster_->kubeconfig()}});
  EXPECT_THAT(r.out, StartsWith("status=5\n")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("hi 3"));
  EXPECT_THAT(r.out, HasSubstr("command terminated with exit code 5"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("Unable to use a TTY")));

  // With one, the command gets a terminal of its size, and input reaches it.
  grpc::ClientContext ctx;
  client::GrpcClient admin(cluster_->ClientOptionsFor("admin-token"));
  auto stream = admin.Exec(&ctx);
  agent::ExecInput first;
  auto* start = first.mutable_start();
  start->set_namespace_("default");
  start->set_pod("term");
  start->add_command("sh");
  start->add_command("-c");
  start->add_command("tty; stty size; read line; echo got $line");
  start->set_stdin(true);
  start->set_tty(true);
  start->mutable_size()->set_rows(33);
  start->mutable_size()->set_cols(101);
  ASSERT_TRUE(stream->Write(first));
  agent::ExecInput in;
  in.set_stdin("typed\r");
  ASSERT_TRUE(stream->Write(in));
  std::string output;
  std::optional<int> exit_code;
  agent::ExecOutput o;
  while (stream->Read(&o)) {
    output += o.stdout();
    if (o.has_exit_code()) {
      exit_code = o.exit_code();
      stream->WritesDone();
    }
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(exit_code, 0);
  EXPECT_THAT(output, HasSubstr("/dev/pts/"));
  EXPECT_THAT(output, HasSubstr("33 101"));
  EXPECT_THAT(output, HasSubstr("got typed"));
  EXPECT_EQ(Ctl({"delete", "pod", "term", "--grace-period", "0", "--force"}).exit_code, 0);
}

TEST_F(AgentTest, LogsBySelector) {
  for (const std::string name : {"sel-a", "sel-b"}) {
    CreatePod(name, fmt::format("  restartPolicy: Never\n  containers:\n  - {{name: c, image: busybox, "
                                "command: [sh, -c, 'for i in $(seq 1 12); do echo {} $i; done']}}\n",
                                name));
    ASSERT_TRUE(Eventually([&] { return PodPhaseIs(name, "Succeeded"); }));
  }
  for (const std::string name : {"sel-a", "sel-b"}) {
    ASSERT_EQ(Ctl({"label", "pod", name, "group=sel"}).exit_code, 0);
  }
  // The last 10 lines of each, as kubectl does with a selector.
  auto r = Ctl({"logs", "-l", "group=sel"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string want;
  for (const std::string name : {"sel-a", "sel-b"}) {
    for (int i = 3; i <= 12; ++i) want += fmt::format("{} {}\n", name, i);
  }
  EXPECT_EQ(r.out, want);
  r = Ctl({"logs", "-l", "group=sel", "--tail", "1", "--prefix"});
  EXPECT_EQ(r.out, "[pod/sel-a/c] sel-a 12\n[pod/sel-b/c] sel-b 12\n");
  r = Ctl({"logs", "-l", "group=none"});
  EXPECT_EQ(r.err, "No resources found in default namespace.\n");
  r = Ctl({"logs", "sel-a", "-l", "group=sel"});
  EXPECT_EQ(r.err, "error: only a selector (-l) or a POD name is allowed\n");
  r = Ctl({"logs"});
  EXPECT_THAT(r.err, HasSubstr("POD or TYPE/NAME is a required argument for the logs command"));
  EXPECT_EQ(Ctl({"delete", "pod", "sel-a", "sel-b"}).exit_code, 0);
}

TEST_F(AgentTest, LogsAndExecOfAControllersPod) {
  const char* deployment = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: logsdep}
spec:
  replicas: 2
  selector: {matchLabels: {app: logsdep}}
  template:
    metadata: {labels: {app: logsdep}}
    spec:
      containers: [{name: c, image: busybox}]
)";
  ASSERT_EQ(Ctl({"create", "-f", "-"}, deployment).exit_code, 0);
  auto r = Ctl({"logs", "deployment/logsdep"});
  EXPECT_EQ(r.err, "error: deployment/logsdep has no pods\n");
  // Its pods (made by hand here: the controllers are not there yet); the running one is used.
  for (const auto& [name, cmd] : std::vector<std::pair<std::string, std::string>>{
           {"logsdep-done", "echo finished"}, {"logsdep-live", "echo serving; exec sleep 100"}}) {
    const std::string yaml = fmt::format(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {}, labels: {{app: logsdep}}}}\nspec:\n"
        "  nodeName: node01\n  restartPolicy: Never\n"
        "  containers: [{{name: c, image: busybox, command: [sh, -c, '{}']}}]\n", name, cmd);
    ASSERT_EQ(Ctl({"create", "-f", "-"}, yaml).exit_code, 0);
  }
  ASSERT_TRUE(Eventually([&] { return PodPhaseIs("logsdep-done", "Succeeded") && PodPhaseIs("logsdep-live", "Running"); }));
  ASSERT_TRUE(Eventually([&] { return Ctl({"logs", "logsdep-live"}).out == "serving\n"; }));
  r = Ctl({"logs", "deploy/logsdep"});
  EXPECT_EQ(r.out, "serving\n");
  EXPECT_EQ(r.err, "Found 2 pods, using pod/logsdep-live\n");
  r = Ctl({"exec", "deployment/logsdep", "--", "sh", "-c", "echo $HOSTNAME"});
  EXPECT_EQ(r.out, "logsdep-live\n");
  EXPECT_EQ(Ctl({"delete", "pod", "logsdep-done", "logsdep-live", "--grace-period", "0", "--force"}).exit_code, 0);
  EXPECT_EQ(Ctl({"delete", "deployment", "logsdep"}).exit_code, 0);
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
  // Not a demo image, so an OCI image, from a registry that is not there (nothing listens on
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
  // The image's folder is the root of a container's own filesystem, where the host offers one.
  const std::string image_root = Isolated() ? "/" : Node01().root() + "/images/tools/v1";
  EXPECT_EQ(Ctl({"logs", "tools", "-c", "a"}).out, "hello world from " + image_root + "\n");
  auto r = Ctl({"logs", "tools", "-c", "b"});
  EXPECT_EQ(r.out, "hello mkube from " + image_root + "\n");
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

TEST_F(AgentTest, TheAgentAnswersOnlyTheApiserver) {
  auto channel = grpc::CreateChannel(Node01().address(), grpc::InsecureChannelCredentials());
  auto stub = agent::Agent::NewStub(channel);
  for (const std::string token : {"", "node01-token", "admin-token"}) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    agent::LogRequest req;
    req.set_namespace_("default");
    req.set_pod("x");
    auto reader = stub->Logs(&ctx, req);
    agent::LogChunk chunk;
    while (reader->Read(&chunk)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
  }
  // A node may not read pods' logs through the apiserver either.
  client::GrpcClient node(cluster_->ClientOptionsFor("node01-token"));
  grpc::ClientContext ctx;
  agent::LogRequest req;
  req.set_namespace_("default");
  req.set_pod("x");
  auto reader = node.Logs(&ctx, req);
  agent::LogChunk chunk;
  while (reader->Read(&chunk)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(AgentTest, LogsAndExecOfPodsThatCannotServeThem) {
  auto r = Ctl({"logs", "nosuch"});
  EXPECT_EQ(r.err, "Error from server (NotFound): pods \"nosuch\" not found\n");
  auto yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: unbound}\nspec:\n  containers: [{name: c, image: busybox}]\n";
  ASSERT_EQ(Ctl({"create", "-f", "-"}, yaml).exit_code, 0);
  r = Ctl({"logs", "unbound"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error from server (BadRequest): pod unbound does not have a host assigned\n");
  r = Ctl({"exec", "unbound"});
  EXPECT_EQ(r.err, "error: you must specify at least one command for the container\n");
  EXPECT_EQ(Ctl({"delete", "pod", "unbound"}).exit_code, 0);
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
