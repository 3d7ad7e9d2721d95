#pragma once

// Carrying out a sandbox (sandbox.h) in the process about to become the container: its own
// mount and UTS namespaces and root (mkube-monitor's child), or a running container's
// namespaces joined (exec and exec probes, in a child the agent forked). The identity part
// runs after fork in a multi-threaded agent, so it only makes system calls on data prepared
// before the fork.

#include <sys/types.h>

#include <string>
#include <vector>

#include "agent/runtime/sandbox_spec.h"

namespace mkube::agent::runtime {

// An identity ready to be taken on in a forked child (no allocation needed there).
struct PreparedIdentity {
  bool change_uid = false, change_gid = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  bool set_groups = false;
  bool no_new_privs = false;
  bool limit_capabilities = false;
  bool keep_all = false;
  uint64_t kept = 0;  // capability bits
  int last_cap = 40;  // /proc/sys/kernel/cap_last_cap
};
PreparedIdentity PrepareIdentity(const Identity& id);

// Becomes the identity: bounding set, groups, gid, uid, the kept capabilities (ambient for a
// non-root user), no_new_privs. System calls only; on failure `*step` names what failed.
bool ApplyIdentity(const PreparedIdentity& id, const char** step);

// In mkube-monitor's child, before exec: new mount and UTS namespaces, the root built by the
// spec's steps at spec.root and made `/`, the hostname set, then the identity taken on.
// Clear words in `error` on failure.
bool EnterSandbox(const SandboxSpec& spec, std::string* error);

// Descriptors of a running container's namespaces, opened before forking (-1: not isolated).
struct ContainerNamespaces {
  int mnt = -1, uts = -1, pid = -1;
  void Close();
};
ContainerNamespaces OpenNamespaces(pid_t container);
// In a forked child: joins them (system calls only). The PID namespace is joined by the
// children the caller forks from then on, not by the caller.
bool JoinNamespaces(const ContainerNamespaces& ns, const char** step);

}  // namespace mkube::agent::runtime
