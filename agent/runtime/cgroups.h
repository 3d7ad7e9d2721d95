#pragma once

// Containers held to their resources with the host's cgroup v1 hierarchies (memory, cpu,
// pids): the folders the agent makes under its own cgroup, and what it writes there.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::runtime {

// Where this node's cgroups go in each hierarchy (empty: that controller cannot be used):
// <mount>/<controller>/<the agent's own cgroup>/mkube/<node>.
struct CgroupRoots {
  std::string memory, cpu, pids;
  bool Any() const { return !memory.empty() || !cpu.empty() || !pids.empty(); }
  // "memory, cpu, pids" or what of it there is.
  std::string Describe() const;
};

// Finds the agent's cgroups in `self_cgroup` (/proc/self/cgroup) under `mount_root`
// (/sys/fs/cgroup) and makes the node's folders; a controller whose folder cannot be made is
// left out. cgroup v2 alone (a unified hierarchy) is not used yet.
CgroupRoots DetectCgroups(const std::string& node,
                          const std::string& self_cgroup = "/proc/self/cgroup",
                          const std::string& mount_root = "/sys/fs/cgroup");

// What holding one container to its pod's spec takes.
struct CgroupPlan {
  std::vector<std::string> dirs;                            // made first, in order
  std::vector<std::pair<std::string, std::string>> writes;  // file, value
  std::vector<std::string> join;  // the container's processes go into these
  std::string memory;             // its memory cgroup, where OOM kills are counted
};

// The container's cgroups: limits.memory as memory.limit_in_bytes (no swap), limits.cpu as a
// CFS quota over 100 ms periods, requests.cpu as cpu.shares (1024 a core, at least 2), and
// `pod_max_pids` (when above 0) as the pod's pids.max. Folders: pod<uid>/<container>, the
// pids one per pod.
CgroupPlan PlanCgroups(const CgroupRoots& roots, const api::Pod& pod,
                       const api::Container& container, int64_t pod_max_pids);
// Makes the folders and writes the limits; an error names the file.
absl::Status ApplyCgroups(const CgroupPlan& plan);
// Removes a pod's cgroups (once its processes are gone).
void RemovePodCgroups(const CgroupRoots& roots, const std::string& pod_uid);

}  // namespace mkube::agent::runtime
