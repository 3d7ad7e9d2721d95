#include "agent/runtime/cgroups.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/quantity.h"
#include "fmt/format.h"

namespace mkube::agent::runtime {
namespace fs = std::filesystem;

namespace {

constexpr int64_t kCfsPeriodUs = 100000;

// The agent's own cgroup in the v1 hierarchy holding `controller`, if there is one.
std::optional<std::string> OwnCgroup(const std::string& self_cgroup,
                                     const std::string& controller) {
  std::ifstream in(self_cgroup);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    for (absl::string_view c : absl::StrSplit(f[1], ',')) {
      if (c == controller) return f[2];
    }
  }
  return std::nullopt;
}

std::string RootFor(const std::string& node, const std::string& self_cgroup,
                    const std::string& mount_root, const std::string& controller) {
  auto own = OwnCgroup(self_cgroup, controller);
  std::error_code ec;
  const fs::path mount = fs::path(mount_root) / controller;
  if (!own || !fs::is_directory(mount, ec)) return "";
  const fs::path root = mount / fs::path(*own).relative_path() / "mkube" / node;
  fs::create_directories(root, ec);
  if (ec) return "";
  return root.lexically_normal().string();
}

int64_t QuantityMilli(const google::protobuf::Map<std::string, std::string>& m, const char* name) {
  auto it = m.find(name);
  if (it == m.end()) return -1;
  auto q = api::Quantity::Parse(it->second);
  return q.ok() ? q->milli() : -1;
}

}  // namespace

std::string CgroupRoots::Describe() const {
  std::vector<std::string> on;
  if (!memory.empty()) on.push_back("memory");
  if (!cpu.empty()) on.push_back("cpu");
  if (!pids.empty()) on.push_back("pids");
  return absl::StrJoin(on, ", ");
}

CgroupRoots DetectCgroups(const std::string& node, const std::string& self_cgroup,
                          const std::string& mount_root) {
  CgroupRoots r;
  r.memory = RootFor(node, self_cgroup, mount_root, "memory");
  r.cpu = RootFor(node, self_cgroup, mount_root, "cpu");
  r.pids = RootFor(node, self_cgroup, mount_root, "pids");
  return r;
}

CgroupPlan PlanCgroups(const CgroupRoots& roots, const api::Pod& pod,
                       const api::Container& container, int64_t pod_max_pids) {
  CgroupPlan plan;
  const std::string pod_dir = "pod" + pod.metadata().uid();
  const auto& limits = container.resources().limits();
  const auto& requests = container.resources().requests();
  if (!roots.memory.empty()) {
    const std::string dir = fmt::format("{}/{}/{}", roots.memory, pod_dir, container.name());
    plan.dirs.push_back(dir);
    plan.join.push_back(dir);
    plan.memory = dir;
    const int64_t memory = QuantityMilli(limits, "memory");
    // -1 lifts a limit an earlier instance of the same name may have left.
    plan.writes.push_back(
        {dir + "/memory.limit_in_bytes",
         memory > 0 ? std::to_string(std::max<int64_t>(memory / 1000, 4096)) : "-1"});
    plan.writes.push_back({dir + "/memory.swappiness", "0"});
  }
  if (!roots.cpu.empty()) {
    const std::string dir = fmt::format("{}/{}/{}", roots.cpu, pod_dir, container.name());
    plan.dirs.push_back(dir);
    plan.join.push_back(dir);
    const int64_t limit = QuantityMilli(limits, "cpu");
    const int64_t request = QuantityMilli(requests, "cpu");
    plan.writes.push_back({dir + "/cpu.cfs_period_us", std::to_string(kCfsPeriodUs)});
    plan.writes.push_back(
        {dir + "/cpu.cfs_quota_us",
         limit > 0 ? std::to_string(std::max<int64_t>(limit * kCfsPeriodUs / 1000, 1000)) : "-1"});
    plan.writes.push_back(
        {dir + "/cpu.shares", std::to_string(std::max<int64_t>(request * 1024 / 1000, 2))});
  }
  if (!roots.pids.empty()) {
    const std::string dir = fmt::format("{}/{}", roots.pids, pod_dir);
    plan.dirs.push_back(dir);
    plan.join.push_back(dir);
    plan.writes.push_back(
        {dir + "/pids.max", pod_max_pids > 0 ? std::to_string(pod_max_pids) : "max"});
  }
  return plan;
}

absl::Status ApplyCgroups(const CgroupPlan& plan) {
  for (const auto& dir : plan.dirs) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return absl::InternalError(fmt::format("cgroup {}: {}", dir, ec.message()));
  }
  for (const auto& [file, value] : plan.writes) {
    std::ofstream out(file);
    out << value;
    if (!out.flush()) {
      return absl::InternalError(
          fmt::format("cannot write {} to {}: {}", value, file, std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

void RemovePodCgroups(const CgroupRoots& roots, const std::string& pod_uid) {
  for (const std::string& root : {roots.memory, roots.cpu, roots.pids}) {
    if (root.empty()) continue;
    const fs::path pod = fs::path(root) / ("pod" + pod_uid);
    std::error_code ec;
    // cgroup folders go with rmdir only (their files cannot be removed), deepest first.
    for (const auto& e : fs::directory_iterator(pod, ec)) {
      if (e.is_directory(ec)) rmdir(e.path().c_str());
    }
    rmdir(pod.c_str());
  }
}

}  // namespace mkube::agent::runtime
