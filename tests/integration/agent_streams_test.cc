// `mkubectl logs` and `exec` through the apiserver to the real mkube-agent: following logs,
// terminals, selectors, a controller's pod, pods that cannot serve them, and the agent's port
// answering only the apiserver.
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
  EXPECT_THAT(st.container_statuses(0).image_id(),
              StartsWith("docker.io/library/busybox@sha256:"));
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

}  // namespace
}  // namespace mkube::testing
