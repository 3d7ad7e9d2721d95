// mkubectl port-forward through the real binaries: local connections reach the pod's HTTP
// server through the apiserver and the pod's agent, several at once, to a pod or a
// Deployment's pod; the errors kubectl gives.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <regex>

#include "tests/util/cluster_suite.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;

class PortForwardTest : public ClusterSuite {
 protected:
  static void SetUpTestSuite() { StartCluster({}); }
};

constexpr char kWeb[] = R"(apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeName: node01
  containers:
  - name: web
    image: soscscs/myapp:v1
    ports: [{name: http, containerPort: 80}]
)";

TEST_F(PortForwardTest, LocalConnectionsReachThePod) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kWeb).exit_code, 0);
  ASSERT_EQ(Ctl({"wait", "--for=condition=Ready", "pod/web", "--timeout=30s"}).exit_code, 0);
  std::unique_ptr<Subprocess> proc;
  std::string log;
  const int port = cluster_->StartPortForward({"pod/web", ":http"}, &proc, &log);
  ASSERT_GT(port, 0) << ReadFile(log);
  // Several connections at once, each its own stream.
  std::vector<std::future<std::string>> replies;
  for (int i = 0; i < 4; ++i) {
    replies.push_back(std::async(std::launch::async, [port] {
      return TcpExchange(port, "GET / HTTP/1.0\r\nHost: x\r\n\r\n");
    }));
  }
  for (auto& r : replies) {
    const std::string reply = r.get();
    EXPECT_THAT(reply, HasSubstr("200 OK"));
    EXPECT_THAT(reply, HasSubstr("Hello MyApp | Version: v1"));
  }
  EXPECT_THAT(ReadFile(log), HasSubstr("Handling connection for " + std::to_string(port)));
  proc->Signal(SIGINT);
  EXPECT_TRUE(proc->Wait(std::chrono::seconds(10)).has_value());
}

TEST_F(PortForwardTest, ToADeploymentsPodAndWhatGoesWrong) {
  ASSERT_EQ(
      Ctl({"create", "deployment", "site", "--image=soscscs/myapp:v1", "--port=80"}).exit_code, 0);
  ASSERT_TRUE(Eventually(
      [] {
        return Ctl({"get", "pods", "-l", "app=site", "--no-headers"}).out.find("Running") !=
               std::string::npos;
      },
      std::chrono::seconds(30)));
  std::unique_ptr<Subprocess> proc;
  std::string log;
  const int port = cluster_->StartPortForward({"deploy/site", "0:80", "0:81"}, &proc, &log);
  ASSERT_GT(port, 0) << ReadFile(log);
  EXPECT_THAT(TcpExchange(port, "GET / HTTP/1.0\r\n\r\n"), HasSubstr("Hello MyApp"));
  // Nothing listens on the pod's port 81: the connection is closed and the error printed.
  std::smatch m;
  const std::string text = ReadFile(log);
  ASSERT_TRUE(std::regex_search(text, m, std::regex("127.0.0.1:(\\d+) -> 81"))) << text;
  EXPECT_EQ(TcpExchange(std::stoi(m[1]), "x"), "");
  EXPECT_TRUE(Eventually([&] {
    return ReadFile(log).find("an error occurred forwarding " + m[1].str() + " -> 81") !=
           std::string::npos;
  })) << ReadFile(log);
  proc->Kill();

  auto r = Ctl({"port-forward", "pod/nosuch", "8080:80"});
  EXPECT_EQ(r.err, "Error from server (NotFound): pods \"nosuch\" not found\n");
  r = Ctl({"port-forward", "pod/web"});
  EXPECT_EQ(r.err, "error: TYPE/NAME and list of ports are required for port-forward\n");
  ASSERT_EQ(Ctl({"create", "-f", "-"},
                "apiVersion: v1\nkind: Pod\nmetadata: {name: waiting}\nspec:\n"
                "  nodeName: nowhere\n  containers: [{name: c, image: busybox}]\n")
                .exit_code,
            0);
  r = Ctl({"port-forward", "waiting", "8080:80"});
  EXPECT_EQ(r.err,
            "error: unable to forward port because pod is not running. Current status=Pending\n");
  r = Ctl({"port-forward", "pod/web", "8080:nope"});
  EXPECT_EQ(r.err, "error: Pod 'web' does not have a named port 'nope'\n");
  EXPECT_EQ(Ctl({"delete", "deploy", "site"}).exit_code, 0);
  EXPECT_EQ(Ctl({"delete", "pod", "waiting", "--grace-period=0", "--force"}).exit_code, 0);
}

}  // namespace
}  // namespace mkube::testing
