// metrics.k8s.io and `mkubectl top` through the real binaries: a real agent measures a pod
// that keeps a CPU busy, the apiserver asks it when asked, mkubectl prints what kubectl top
// prints; a node without an agent is <unknown>.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "proto/agent/stats.grpc.pb.h"
#include "tests/util/cluster_suite.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

class TopTest : public ClusterSuite {
 protected:
  static void SetUpTestSuite() {
    StartCluster({.scheduler = false,
                  .controller_manager = false,
                  .agent_flags = {"--metrics-resolution=0.25"}});
  }
  static std::vector<std::string> Lines(const std::string& s) {
    return absl::StrSplit(s, '\n', absl::SkipEmpty());
  }
  static std::vector<std::string> Cells(const std::string& line) {
    return absl::StrSplit(line, ' ', absl::SkipEmpty());
  }
  // The millicores of a "123m" cell (-1 when it is not one).
  static int64_t Milli(const std::string& cell) {
    int64_t m = -1;
    if (cell.size() < 2 || cell.back() != 'm' ||
        !absl::SimpleAtoi(cell.substr(0, cell.size() - 1), &m)) {
      return -1;
    }
    return m;
  }
};

constexpr char kBusy[] = R"(apiVersion: v1
kind: Pod
metadata: {name: busy, labels: {app: busy}}
spec:
  nodeName: node01
  containers:
  - name: spin
    image: busybox
    command: ["sh", "-c", "while :; do :; done"]
  - name: idle
    image: busybox
    command: ["sleep", "3600"]
)";

TEST_F(TopTest, PodsAndNodesShowWhatTheAgentMeasured) {
  // A node registered by hand has no agent to ask.
  ASSERT_EQ(Ctl({"create", "-f", "-"}, "apiVersion: v1\nkind: Node\nmetadata: {name: lonely}\n")
                .exit_code,
            0);
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kBusy).exit_code, 0);
  CommandResult top;
  // The spinning container uses about a core; the window starts once it has been measured twice.
  ASSERT_TRUE(Eventually(
      [&] {
        top = Ctl({"top", "pods"});
        auto lines = Lines(top.out);
        return top.exit_code == 0 && lines.size() == 2 && Milli(Cells(lines[1])[1]) >= 300;
      },
      std::chrono::seconds(30)))
      << top.out << top.err;
  EXPECT_THAT(Lines(top.out)[0], MatchesRegex("NAME +CPU\\(cores\\) +MEMORY\\(bytes\\)"));
  EXPECT_THAT(Lines(top.out)[1], MatchesRegex("busy +[0-9]+m +[0-9]+Mi"));

  auto containers = Ctl({"top", "pod", "busy", "--containers", "--sort-by=cpu"});
  ASSERT_EQ(containers.exit_code, 0) << containers.err;
  auto lines = Lines(containers.out);
  ASSERT_EQ(lines.size(), 3u) << containers.out;
  EXPECT_THAT(lines[0], MatchesRegex("POD +NAME +CPU\\(cores\\) +MEMORY\\(bytes\\)"));
  EXPECT_EQ(Cells(lines[1])[1], "spin");  // the busier first
  EXPECT_EQ(Cells(lines[2])[1], "idle");
  EXPECT_LT(Milli(Cells(lines[2])[2]), 100);

  auto all = Ctl({"top", "pods", "-A", "-l", "app=busy", "--sum"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  lines = Lines(all.out);
  ASSERT_EQ(lines.size(), 4u) << all.out;
  EXPECT_THAT(lines[0], MatchesRegex("NAMESPACE +NAME +CPU\\(cores\\) +MEMORY\\(bytes\\)"));
  EXPECT_THAT(lines[1], MatchesRegex("default +busy +[0-9]+m +[0-9]+Mi"));
  EXPECT_THAT(lines[2], MatchesRegex(" +________ +________"));
  EXPECT_THAT(lines[3], MatchesRegex(" +[0-9]+m +[0-9]+Mi"));

  // The node counts the agent and its containers; the node without an agent is <unknown>.
  // The node's figure is measured over a window of its own, apart from the pods': on a busy
  // machine it can reach the spinning core a round after the pod's (275m once, against 300m),
  // so it is waited for as the pod's is.
  CommandResult nodes;
  ASSERT_TRUE(Eventually(
      [&] {
        nodes = Ctl({"top", "nodes"});
        lines = Lines(nodes.out);
        return nodes.exit_code == 0 && lines.size() == 5u && Cells(lines[2]).size() > 1 &&
               Milli(Cells(lines[2])[1]) >= 300;
      },
      std::chrono::seconds(30)))
      << nodes.out << nodes.err;
  EXPECT_THAT(lines[0],
              MatchesRegex("NAME +CPU\\(cores\\) +CPU\\(%\\) +MEMORY\\(bytes\\) +MEMORY\\(%\\)"));
  EXPECT_THAT(lines[1], MatchesRegex("master01 +[0-9]+m +[0-9]+% +[0-9]+Mi +[0-9]+%"));
  EXPECT_THAT(lines[2], MatchesRegex("node01 +[0-9]+m +[0-9]+% +[0-9]+Mi +[0-9]+%"));
  EXPECT_THAT(lines[3], MatchesRegex("node02 +[0-9]+m +[0-9]+% +[0-9]+Mi +[0-9]+%"));
  EXPECT_THAT(lines[4], MatchesRegex("lonely +<unknown> +<unknown> +<unknown> +<unknown>"));
  auto busiest = Ctl({"top", "nodes", "--sort-by=cpu", "--no-headers"});
  EXPECT_THAT(busiest.out, ::testing::StartsWith("node01 ")) << busiest.out;
  EXPECT_THAT(Ctl({"top", "node", "node01", "--no-headers"}).out, MatchesRegex("node01 .*\n"));

  // The API as metrics.k8s.io serves it.
  auto raw = Ctl({"get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/busy"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  auto pm = nlohmann::json::parse(raw.out);
  EXPECT_EQ(pm["kind"], "PodMetrics");
  EXPECT_EQ(pm["apiVersion"], "metrics.k8s.io/v1beta1");
  EXPECT_EQ(pm["metadata"]["labels"]["app"], "busy");
  EXPECT_THAT(pm["window"].get<std::string>(), MatchesRegex("[0-9.]+m?s"));
  ASSERT_EQ(pm["containers"].size(), 2u);
  EXPECT_THAT(pm["containers"][0]["usage"]["cpu"].get<std::string>(), MatchesRegex("[0-9]+n"));
  EXPECT_THAT(pm["containers"][0]["usage"]["memory"].get<std::string>(),
              MatchesRegex("[1-9][0-9]*Ki"));
  raw = Ctl({"get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  auto list = nlohmann::json::parse(raw.out);
  EXPECT_EQ(list["kind"], "NodeMetricsList");
  ASSERT_EQ(list["items"].size(), 3u);
  EXPECT_EQ(list["items"][1]["metadata"]["name"], "node01");
  EXPECT_EQ(Ctl({"get", "nodes.metrics.k8s.io", "node01", "-o", "name"}).out,
            "nodemetrics.metrics.k8s.io/node01\n");

  EXPECT_EQ(Ctl({"delete", "pod", "busy", "--grace-period=0"}).exit_code, 0);
  EXPECT_EQ(Ctl({"delete", "node", "lonely"}).exit_code, 0);
}

TEST_F(TopTest, WhatTopSaysWhenThereIsNothingToShow) {
  auto r = Ctl({"top", "pods", "-n", "kube-public"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "No resources found in kube-public namespace.\n");
  r = Ctl({"top", "pod", "nosuch"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "Error from server (NotFound): podmetrics.metrics.k8s.io \"default/nosuch\" not "
            "found\n");
  r = Ctl({"top", "node", "nosuch"});
  EXPECT_EQ(r.err,
            "Error from server (NotFound): nodemetrics.metrics.k8s.io \"nosuch\" not found\n");
  r = Ctl({"top", "nodes", "--sort-by=name"});
  EXPECT_EQ(r.err, "error: --sort-by accepts only cpu or memory\n");
  r = Ctl({"top", "pods", "x", "-l", "a=b"});
  EXPECT_EQ(r.err, "error: only one of NAME or selector can be provided\n");
  // A pod too new to have been measured twice: not yet.
  const std::string yaml =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: fresh}\nspec:\n  nodeName: nowhere\n"
      "  containers: [{name: c, image: busybox}]\n";
  ASSERT_EQ(Ctl({"create", "-n", "kube-public", "-f", "-"}, yaml).exit_code, 0);
  r = Ctl({"top", "pods", "-n", "kube-public"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: metrics not available yet\n");
  EXPECT_EQ(
      Ctl({"delete", "pod", "fresh", "-n", "kube-public", "--grace-period=0", "--force"}).exit_code,
      0);
  // Measured, never stored: nothing else may be done with them.
  r = Ctl({"create", "-f", "-"},
          "apiVersion: metrics.k8s.io/v1beta1\nkind: NodeMetrics\nmetadata: {name: x}\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("MethodNotAllowed"));
}

TEST_F(TopTest, TheAgentGivesItsFiguresOnlyToTheApiserver) {
  auto stub = agent::Stats::NewStub(
      grpc::CreateChannel(cluster_->agent("node01").address(), grpc::InsecureChannelCredentials()));
  for (const std::string token : {"", "node01-token", "admin-token"}) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    agent::SummaryReply reply;
    EXPECT_EQ(stub->Summary(&ctx, {}, &reply).error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << token;
  }
}

}  // namespace
}  // namespace mkube::testing
