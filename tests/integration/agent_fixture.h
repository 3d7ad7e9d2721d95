#pragma once

// A store, an apiserver and one real mkube-agent (node01, on 127.0.0.1) with the test images,
// shared by a test suite, with mkubectl pointed at them and helpers to make and look at pods on
// that node.
#include <gtest/gtest.h>
#include <signal.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "client/client.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "proto/api/core.pb.h"
#include "tests/util/cluster_suite.h"

namespace mkube::testing {

class AgentTest : public ClusterSuite {
 protected:
  static void SetUpTestSuite() {
    StartCluster({.nodes = {"node01"},
                  .node_ips = false,
                  .images = Cluster::Images::kTest,
                  .scheduler = false,
                  .controller_manager = false,
                  .agent_flags = agent_flags_});
  }

  static AgentProcess& Node01() { return cluster_->agent("node01"); }
  static client::ApiClient* client() { return cluster_->client(); }

  // Creates a pod bound to node01 from the YAML of its spec's containers part.
  static api::Pod CreatePod(const std::string& name, const std::string& spec_yaml) {
    const std::string yaml = fmt::format(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {}\nspec:\n  nodeName: node01\n{}", name,
        spec_yaml);
    auto r = Ctl({"create", "-f", "-"}, yaml);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return GetPod(name).value_or(api::Pod());
  }
  static absl::StatusOr<api::Pod> GetPod(const std::string& name) {
    return client()->Get<api::Pod>("pods", "default", name);
  }
  static bool PodPhaseIs(const std::string& name, const std::string& phase) {
    auto p = GetPod(name);
    return p.ok() && p->status().phase() == phase;
  }
  static bool PodGone(const std::string& name) {
    return GetPod(name).status().code() == absl::StatusCode::kNotFound;
  }
  // Whether node01 gives containers a root filesystem of their own (an agent running as root
  // on a host with mount namespaces).
  static bool Isolated() {
    auto node = client()->Get<api::Node>("nodes", "", "node01");
    if (!node.ok()) return false;
    auto it = node->metadata().annotations().find("mkube.io/isolation");
    return it != node->metadata().annotations().end() && it->second.rfind("mount", 0) == 0;
  }
  // On the node, the folder of a pod whose containers work in an emptyDir "work" mounted at
  // /work (workingDir): the volume's folder where containers are isolated, else /work under the
  // pod's root folder they run in.
  static std::string PodRoot(const api::Pod& pod, const AgentProcess* agent = nullptr) {
    const std::string sandbox =
        fmt::format("{}/pods/{}", (agent ? *agent : Node01()).root(), pod.metadata().uid());
    return Isolated() ? sandbox + "/volumes/work" : sandbox + "/root/work";
  }
  // The volume and mount that give a container the work folder PodRoot finds.
  static constexpr char kWorkVolume[] = "  volumes: [{name: work, emptyDir: {}}]\n";
  static constexpr char kWorkMount[] =
      "    workingDir: /work\n    volumeMounts: [{name: work, mountPath: /work}]\n";

  // A container's processes on the node, found from its first one (the pid the agent
  // recorded): where containers are isolated, every process in its PID namespace, else those
  // of its process group.
  struct Processes {
    pid_t first = -1;
    std::string pid_ns;
    // The namespace's pid 1 (host pid and start time): a PID namespace ends with its init,
    // and the kernel may give a later namespace the same name.
    pid_t init = -1;
    std::string init_start;
  };
  // Field 22 of /proc/<pid>/stat (when the process started); empty when it is gone.
  static std::string StartTime(pid_t pid) {
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) return "";
    std::istringstream fields(text.substr(close + 2));
    std::string f;
    for (int i = 3; i <= 22 && fields >> f; ++i) {
    }
    return f;
  }
  // The process of `pid_ns` that is pid 1 in it (NSpid's last field), or -1.
  static pid_t InitOf(const std::string& pid_ns) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = e.path().filename().string();
      if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
      if (std::filesystem::read_symlink(e.path() / "ns/pid", ec).string() != pid_ns) continue;
      std::ifstream status(e.path() / "status");
      for (std::string line; std::getline(status, line);) {
        if (line.rfind("NSpid:", 0) == 0 && line.size() > 2 &&
            line.substr(line.size() - 2) == "\t1") {
          return static_cast<pid_t>(std::stol(name));
        }
      }
    }
    return -1;
  }
  // The container's processes in its start number `attempt` (0: the first, 1: after one
  // restart...).
  static Processes ProcessesOf(const api::Pod& pod, const std::string& container,
                               const AgentProcess* agent = nullptr, int attempt = 0) {
    Processes p;
    std::ifstream in(fmt::format("{}/pods/{}/logs/{}/{}.pid", (agent ? *agent : Node01()).root(),
                                 pod.metadata().uid(), container, attempt));
    auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return p;
    p.first = j.value("pid", -1);
    std::error_code ec;
    p.pid_ns = std::filesystem::read_symlink(fmt::format("/proc/{}/ns/pid", p.first), ec).string();
    if (!p.pid_ns.empty()) {
      p.init = InitOf(p.pid_ns);
      p.init_start = StartTime(p.init);
    }
    return p;
  }
  // The /proc/<pid>/stat text of each of the container's processes still there.
  static std::vector<std::string> StatsOf(const Processes& p) {
    const bool isolated = Isolated();
    std::vector<std::string> out;
    // Its init gone, the namespace is gone: processes found under its name are another's.
    if (isolated && (p.init < 0 || StartTime(p.init) != p.init_start)) return out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = e.path().filename().string();
      if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
      if (isolated && std::filesystem::read_symlink(e.path() / "ns/pid", ec).string() != p.pid_ns) {
        continue;
      }
      std::ifstream stat(e.path() / "stat");
      std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
      const size_t close = text.rfind(')');
      int pgid = 0;
      if (close == std::string::npos) continue;
      if (!isolated &&
          (std::sscanf(text.c_str() + close + 2, "%*c %*d %d", &pgid) != 1 || pgid != p.first)) {
        continue;
      }
      out.push_back(text.substr(close + 2));
    }
    return out;
  }
  static bool AllGone(const Processes& p) { return ProcessGone(p.first) && StatsOf(p).empty(); }
  static pid_t ReadPid(const std::string& path) {
    std::ifstream in(path);
    pid_t pid = -1;
    in >> pid;
    return pid;
  }
  static bool ProcessGone(pid_t pid) { return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH; }

  static inline std::vector<std::string> agent_flags_;  // for the suite's agents
};

}  // namespace mkube::testing
