// mkube-agent --simulated through the real binaries: many nodes from one process that
// mkubectl sees as ordinary nodes, with a real agent in the same cluster; pods bound to
// simulated nodes run (and end, and go) without any process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "client/client.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"
#include "tests/util/cluster_suite.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;

class SimulatedTest : public ClusterSuite {
 protected:
  static void SetUpTestSuite() {
    StartCluster({.nodes = {"node01"},
                  .node_ips = false,
                  .images = Cluster::Images::kTest,
                  .simulated_nodes = 20,
                  .simulated_flags = {"--simulated-zones", "2", "--simulated-capacity",
                                      "cpu=4,memory=8Gi,pods=10"},
                  .controller_manager = false});
  }
  static client::ApiClient* client() { return cluster_->client(); }
  static std::vector<std::string> Lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
      if (!l.empty()) out.push_back(l);
    }
    return out;
  }
  static std::string Phase(const std::string& pod) {
    auto p = client()->Get<api::Pod>("pods", "default", pod);
    return p.ok() ? p->status().phase() : "";
  }
  static std::string NodeOf(const std::string& pod) {
    auto p = client()->Get<api::Pod>("pods", "default", pod);
    return p.ok() ? p->spec().node_name() : "";
  }
  static std::string PodYaml(const std::string& name, const std::string& extra_spec,
                             const std::string& annotations = "") {
    return fmt::format(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {}\n{}spec:\n{}  containers:\n"
        "  - name: c\n    image: web:v1\n    resources: {{requests: {{cpu: 100m}}}}\n",
        name, annotations, extra_spec);
  }
};

TEST_F(SimulatedTest, SimulatedNodesAreOrdinaryReadyNodesBesideARealOne) {
  auto nodes = Lines(Ctl({"get", "nodes", "--no-headers"}).out);
  ASSERT_EQ(nodes.size(), 21u);
  for (const auto& line : nodes) EXPECT_THAT(line, HasSubstr(" Ready ")) << line;
  EXPECT_THAT(nodes.front(), HasSubstr("node01"));
  EXPECT_THAT(nodes.back(), HasSubstr("sim-0019"));
  EXPECT_EQ(
      Lines(Ctl({"get", "nodes", "-l", "topology.kubernetes.io/zone=zone-1", "--no-headers"}).out)
          .size(),
      10u);
  auto d = Ctl({"describe", "node", "sim-0007"});
  EXPECT_THAT(d.out, ::testing::ContainsRegex("cpu: +4"));
  EXPECT_THAT(d.out, ::testing::ContainsRegex("pods: +10"));
  // Each node has its own Lease, held by it, as a real agent's.
  auto lease = client()->Get<api::Lease>("leases", "kube-node-lease", "sim-0019");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->spec().holder_identity(), "sim-0019");
}

TEST_F(SimulatedTest, PodsRunEndAndGoWithoutProcesses) {
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(Ctl({"create", "-f", "-"}, PodYaml(fmt::format("p{}", i), "")).exit_code, 0);
  }
  ASSERT_TRUE(Eventually(
      [] {
        for (int i = 0; i < 30; ++i) {
          if (Phase(fmt::format("p{}", i)) != "Running") return false;
        }
        return true;
      },
      std::chrono::seconds(30)));
  std::set<std::string> used;
  for (int i = 0; i < 30; ++i) used.insert(NodeOf(fmt::format("p{}", i)));
  EXPECT_GT(used.size(), 10u) << "spread over the nodes";
  auto wide = Ctl({"get", "pod", "p0", "-o", "wide", "--no-headers"}).out;
  EXPECT_THAT(wide, HasSubstr("1/1"));
  EXPECT_THAT(wide, HasSubstr("Running"));
  // Pods that end: after their run-for, by their exit code.
  const std::string never = "  restartPolicy: Never\n  nodeName: sim-0003\n";
  ASSERT_EQ(Ctl({"create", "-f", "-"},
                PodYaml("done", never, "  annotations: {simulated.mkube.io/run-for: 1s}\n"))
                .exit_code,
            0);
  ASSERT_EQ(Ctl({"create", "-f", "-"}, PodYaml("broken", never,
                                               "  annotations: {simulated.mkube.io/run-for: 1s, "
                                               "simulated.mkube.io/exit-code: \"3\"}\n"))
                .exit_code,
            0);
  ASSERT_TRUE(Eventually([] { return Phase("done") == "Succeeded"; }, std::chrono::seconds(15)));
  ASSERT_TRUE(Eventually([] { return Phase("broken") == "Failed"; }, std::chrono::seconds(15)));
  EXPECT_THAT(Ctl({"get", "pod", "done", "--no-headers"}).out, HasSubstr("Completed"));
  // Deleted with the default grace (30 s): gone as soon as the node hears of it.
  ASSERT_EQ(Ctl({"delete", "pod", "p0", "--wait=false"}).exit_code, 0);
  EXPECT_TRUE(Eventually([] { return !client()->Get<api::Pod>("pods", "default", "p0").ok(); },
                         std::chrono::seconds(10)));
  // The real node still runs real processes.
  ASSERT_EQ(Ctl({"create", "-f", "-"},
                PodYaml("real", "  nodeSelector: {kubernetes.io/hostname: node01}\n"))
                .exit_code,
            0);
  ASSERT_TRUE(Eventually([] { return Phase("real") == "Running"; }, std::chrono::seconds(20)));
  EXPECT_EQ(NodeOf("real"), "node01");
  EXPECT_EQ(Ctl({"logs", "real"}).exit_code, 0);
  // A simulated pod has no process, so no logs.
  auto logs = Ctl({"logs", "p1"});
  EXPECT_NE(logs.exit_code, 0);
  EXPECT_THAT(logs.err, HasSubstr("has not reported where its agent listens"));
}

}  // namespace
}  // namespace mkube::testing
