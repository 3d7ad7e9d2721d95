// The agent's port with TLS both ways, as up.sh sets it up: the apiserver's logs, exec,
// port-forward and top reach the agents; nothing else does (no certificate, a node's
// certificate, the token alone); and the apiserver refuses a server at a node's address whose
// certificate is another node's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

#include "proto/agent/stats.grpc.pb.h"
#include "proto/api/core.pb.h"
#include "tests/util/cluster_suite.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;

class AgentTlsTest : public ClusterSuite {
 protected:
  static void SetUpTestSuite() {
    StartCluster({.scheduler = false,
                  .controller_manager = false,
                  .agent_flags = {"--metrics-resolution=0.25"},
                  .agent_tls = true});
  }
  // Stats.Summary straight to node01's agent with these credentials (and token, if any).
  static grpc::Status CallAgent(const std::shared_ptr<grpc::ChannelCredentials>& creds,
                                const std::string& token = "") {
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("node01");
    auto stub = agent::Stats::NewStub(
        grpc::CreateCustomChannel(cluster_->agent("node01").address(), creds, args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    agent::SummaryReply reply;
    return stub->Summary(&ctx, {}, &reply);
  }
  static grpc::SslCredentialsOptions Tls(const std::string& cert = "", const std::string& key = "") {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = ReadFile(cluster_->pki() + "/ca.crt");
    if (!cert.empty()) {
      o.pem_cert_chain = ReadFile(cert);
      o.pem_private_key = ReadFile(key);
    }
    return o;
  }
};

constexpr char kPods[] = R"(apiVersion: v1
kind: Pod
metadata: {name: tools}
spec:
  nodeName: node01
  containers:
  - name: tools
    image: busybox
    command: [sh, -c, "echo hello over tls; while true; do sleep 1; done"]
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  nodeName: node01
  containers:
  - name: web
    image: soscscs/myapp:v1
    ports: [{containerPort: 80}]
)";

TEST_F(AgentTlsTest, LogsExecPortForwardAndTopGoThroughTheApiserver) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kPods).exit_code, 0);
  ASSERT_EQ(Ctl({"wait", "--for=condition=Ready", "pod/tools", "pod/web", "--timeout=30s"})
                .exit_code,
            0)
      << cluster_->Logs();
  EXPECT_TRUE(Eventually([] { return Ctl({"logs", "tools"}).out == "hello over tls\n"; }))
      << Ctl({"logs", "tools"}).err;
  auto r = Ctl({"exec", "tools", "--", "echo", "inside"});
  EXPECT_EQ(r.out, "inside\n") << r.err;

  std::unique_ptr<Subprocess> proc;
  std::string log;
  const int port = cluster_->StartPortForward({"pod/web", "0:80"}, &proc, &log);
  ASSERT_GT(port, 0) << ReadFile(log);
  EXPECT_THAT(TcpExchange(port, "GET / HTTP/1.0\r\n\r\n"), HasSubstr("Hello MyApp"));
  proc->Signal(SIGINT);
  proc->Wait(std::chrono::seconds(10));

  EXPECT_TRUE(Eventually([] {
    auto top = Ctl({"top", "node", "node01", "--no-headers"});
    return top.exit_code == 0 && top.out.rfind("node01 ", 0) == 0;
  })) << Ctl({"top", "node", "node01"}).err;
}

TEST_F(AgentTlsTest, OnlyTheApiserversCertificateIsServed) {
  const std::string pki = cluster_->pki();
  // The apiserver's client certificate: served (so what follows fails for its credentials).
  EXPECT_TRUE(CallAgent(grpc::SslCredentials(Tls(pki + "/apiserver-agent-client.crt",
                                                 pki + "/apiserver-agent-client.key")))
                  .ok());
  // No certificate, even with the token of the plaintext mode.
  auto st = CallAgent(grpc::SslCredentials(Tls()), "agent-token");
  EXPECT_FALSE(st.ok());
  std::cout << "no certificate: " << st.error_code() << " " << st.error_message() << "\n";
  // Another node's certificate, signed by the same CA.
  st = CallAgent(grpc::SslCredentials(
      Tls(pki + "/nodes/node02/agent.crt", pki + "/nodes/node02/agent.key")));
  EXPECT_FALSE(st.ok());
  std::cout << "node02's certificate: " << st.error_code() << " " << st.error_message() << "\n";
  // The apiserver's certificate for the store: the right CA, not the agents' caller.
  st = CallAgent(grpc::SslCredentials(
      Tls(pki + "/apiserver-etcd-client.crt", pki + "/apiserver-etcd-client.key")));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  // Plaintext with the token: not spoken at all.
  st = CallAgent(grpc::InsecureChannelCredentials(), "agent-token");
  EXPECT_FALSE(st.ok());
  std::cout << "plaintext: " << st.error_code() << " " << st.error_message() << "\n";
}

TEST_F(AgentTlsTest, TheApiserverRefusesAServerWithAnotherNodesCertificate) {
  // A Node "impostor" whose address is node02's agent: the agent there answers with node02's
  // certificate, which is not impostor's.
  auto node02 = cluster_->client()->Get<api::Node>("nodes", "", "node02");
  ASSERT_TRUE(node02.ok()) << node02.status();
  api::Node impostor;
  impostor.mutable_metadata()->set_name("impostor");
  ASSERT_TRUE(cluster_->client()->Create("nodes", "", impostor).ok());
  auto created = cluster_->client()->Get<api::Node>("nodes", "", "impostor");
  ASSERT_TRUE(created.ok());
  *created->mutable_status() = node02->status();
  ASSERT_TRUE(cluster_->client()->Update("nodes", "", *created, "status").ok());
  ASSERT_EQ(Ctl({"apply", "-f", "-"},
                "apiVersion: v1\nkind: Pod\nmetadata: {name: lost}\nspec:\n  nodeName: impostor\n"
                "  containers: [{name: c, image: busybox}]\n")
                .exit_code,
            0);
  auto r = Ctl({"logs", "lost"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("cannot reach the agent of node \"impostor\"")) << r.err;
  std::cout << "logs through the impostor: " << r.err;
  // The same agent is reached under its own name.
  ASSERT_EQ(Ctl({"apply", "-f", "-"},
                "apiVersion: v1\nkind: Pod\nmetadata: {name: found}\nspec:\n  nodeName: node02\n"
                "  containers: [{name: c, image: busybox, command: [echo, found]}]\n")
                .exit_code,
            0);
  EXPECT_TRUE(Eventually([] { return Ctl({"logs", "found"}).out == "found\n"; }))
      << Ctl({"logs", "found"}).err;
}

TEST(AgentServing, PlaintextOnlyOnLoopbackAndTlsFlagsTogether) {
  TempDir dir;
  std::ofstream(dir.Sub("node.token")) << "t\n";
  std::ofstream(dir.Sub("agent.token")) << "a\n";
  const std::vector<std::string> base = {BinDir() + "/mkube-agent", "--apiserver", "127.0.0.1:1",
                                         "--insecure-plaintext", "--token-file",
                                         dir.Sub("node.token"), "--root-dir", dir.Sub("root")};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv);
  };
  auto r = run({"--listen", "10.1.2.3:10250", "--agent-token-file", dir.Sub("agent.token")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("10.1.2.3:10250 is not a loopback address: serving it needs TLS"));
  r = run({"--listen", "127.0.0.1:0", "--tls-cert-file", dir.Sub("x.crt")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--tls-cert-file, --tls-private-key-file and --client-ca-file go "
                               "together"));
  r = run({"--listen", "127.0.0.1:0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("on loopback --agent-token-file"));
}

}  // namespace
}  // namespace mkube::testing
