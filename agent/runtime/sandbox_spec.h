#pragma once

// A container's sandbox as plain data: what the agent works out (sandbox.h) and
// mkube-monitor carries out (sandbox_enter.h), passed between them as JSON.

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json_fwd.hpp"

namespace mkube::agent::runtime {

// Who a container's processes run as.
struct Identity {
  int64_t uid = -1, gid = -1;   // -1: as the agent
  std::vector<int64_t> groups;  // supplementary
  bool no_new_privs = false;
  // Capabilities kept (numbers as in linux/capability.h); all others are dropped, unless
  // keep_all (privileged).
  std::vector<int> capabilities;
  bool keep_all = false;
  bool limit_capabilities = false;  // false: left as they are (the agent is not root)
};

// One step of building a container's root, in order.
struct MountStep {
  enum class Kind { kBind, kTmpfs, kProc, kSymlink, kFile, kDevice };
  Kind kind = Kind::kBind;
  std::string source;  // bind/device: host path; symlink: its target; file: its contents;
                       // tmpfs: mount options
  std::string target;  // absolute path inside the container
  bool read_only = false;
};

// A container's sandbox: a mount namespace whose root is built by `steps` at `root` (an empty
// host folder), a hostname of its own, and an identity. The root is the image's files under a
// writable layer when `image_layers` are set (overlayfs stacks them, the topmost first), else a
// fresh tmpfs. Writable layers live
// in memory that the container's mount namespace alone holds: each start of a container begins
// from its image again, as in Kubernetes.
struct SandboxSpec {
  bool isolated = false;  // false: runs in the node's filesystem (the host offers nothing)
  std::string root;
  std::vector<std::string> image_layers;
  std::string hostname;
  std::vector<MountStep> steps;
  bool read_only_root = false;
  Identity identity;
  std::vector<std::string> cgroups;  // cgroup folders its processes join
  // The pod's PID namespace to join (/proc/<pid>/ns/pid of its pause process) when its
  // containers share one; empty: a namespace of its own with an init.
  std::string join_pid_ns;
  std::string memory_cgroup;         // where its OOM kills are counted
};
nlohmann::json ToJson(const SandboxSpec& spec);
// False (with the reason in `error`) when `j` is not a sandbox.
bool SandboxFromJson(const nlohmann::json& j, SandboxSpec* spec, std::string* error);
nlohmann::json ToJson(const Identity& id);
Identity IdentityFromJson(const nlohmann::json& j);

}  // namespace mkube::agent::runtime
