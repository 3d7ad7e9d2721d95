#pragma once

// How a container is held apart from the node: what the host offers (found once at start),
// and, for each container, the root filesystem and identity it gets. The agent works these
// out (plain data, tested without privileges); mkube-monitor and exec carry them out
// (sandbox_enter.h).

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/runtime/cgroups.h"
#include "agent/runtime/image.h"
#include "agent/runtime/sandbox_spec.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::runtime {

// What this host lets the agent do, found at start.
struct HostIsolation {
  bool root = false;      // the agent runs as root (users and capabilities can change)
  bool mount_ns = false;  // containers get a root filesystem of their own
  bool overlay = false;   // an image's folder can be merged with the host's of that name
  CgroupRoots cgroups;    // memory, cpu and pids limits (set by the agent for its node)
  // Said in the agent's log and the Node's annotation: what is enforced, then what is not.
  std::string Describe() const;
  // The protections missing here (empty when none are).
  std::vector<std::string> Missing() const;
};

// Probes the host: root, a mount namespace (tried in a short-lived child), overlayfs.
HostIsolation DetectIsolation();

// The uid an agent running as root gives containers that name none (nobody).
inline constexpr int64_t kDefaultUid = 65534;

// Why a container cannot be created as asked (CreateContainerConfigError in its status).
struct ConfigError {
  std::string message;
};

// Who the container runs as: its securityContext, else the pod's, else the image's user,
// else (when the agent is root) kDefaultUid; runAsNonRoot refuses uid 0.
absl::StatusOr<Identity> ResolveIdentity(const api::Pod& pod, const api::Container& container,
                                         const Image& image, const HostIsolation& host);

// Everything that goes into a container's root: the image's files, generated /etc files and
// the node's resolver, /proc, a minimal /dev, a private /tmp and the pod's volumes.
// `volumes_dir` holds the pod's emptyDirs; `root` is where the root is assembled.
struct SandboxInputs {
  const api::Pod* pod = nullptr;
  const api::Container* container = nullptr;
  const Image* image = nullptr;
  std::string root;
  std::string volumes_dir;
  std::string pod_ip;
  Identity identity;
  std::string host_root = "/";  // where the node's files are looked up (tests)
  bool overlay = true;
};
absl::StatusOr<SandboxSpec> BuildSandbox(const SandboxInputs& in);

// The host folder behind a volume of the pod (emptyDir under volumes_dir, hostPath as given),
// created when its kind says so; an error names the volume and why it cannot be mounted.
absl::StatusOr<std::string> PrepareVolume(const api::Volume& volume,
                                          const std::string& volumes_dir);

// Where `name` (argv[0]) is inside the sandbox, looked up through the container's PATH, as
// exec would find it there; NotFound in the runtime's words when it is nowhere.
absl::StatusOr<std::string> ResolveInSandbox(const std::string& name,
                                             const std::vector<std::string>& env,
                                             const SandboxSpec& spec);

}  // namespace mkube::agent::runtime
