#include "agent/runtime/sandbox.h"

#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/image/layer_view.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::runtime {
namespace fs = std::filesystem;

namespace {

// Capability names by number (linux/capability.h), as securityContext names them.
constexpr std::array<std::string_view, 41> kCapabilities = {"CHOWN",
                                                            "DAC_OVERRIDE",
                                                            "DAC_READ_SEARCH",
                                                            "FOWNER",
                                                            "FSETID",
                                                            "KILL",
                                                            "SETGID",
                                                            "SETUID",
                                                            "SETPCAP",
                                                            "LINUX_IMMUTABLE",
                                                            "NET_BIND_SERVICE",
                                                            "NET_BROADCAST",
                                                            "NET_ADMIN",
                                                            "NET_RAW",
                                                            "IPC_LOCK",
                                                            "IPC_OWNER",
                                                            "SYS_MODULE",
                                                            "SYS_RAWIO",
                                                            "SYS_CHROOT",
                                                            "SYS_PTRACE",
                                                            "SYS_PACCT",
                                                            "SYS_ADMIN",
                                                            "SYS_BOOT",
                                                            "SYS_NICE",
                                                            "SYS_RESOURCE",
                                                            "SYS_TIME",
                                                            "SYS_TTY_CONFIG",
                                                            "MKNOD",
                                                            "LEASE",
                                                            "AUDIT_WRITE",
                                                            "AUDIT_CONTROL",
                                                            "SETFCAP",
                                                            "MAC_OVERRIDE",
                                                            "MAC_ADMIN",
                                                            "SYSLOG",
                                                            "WAKE_ALARM",
                                                            "BLOCK_SUSPEND",
                                                            "AUDIT_READ",
                                                            "PERFMON",
                                                            "BPF",
                                                            "CHECKPOINT_RESTORE"};
constexpr int kNetBindService = 10;

std::optional<int> CapabilityNumber(std::string name) {
  name = absl::AsciiStrToUpper(name);
  if (name.rfind("CAP_", 0) == 0) name = name.substr(4);
  for (size_t i = 0; i < kCapabilities.size(); ++i) {
    if (kCapabilities[i] == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

// The capabilities a container keeps: NET_BIND_SERVICE (pods share the node's network, where
// a pod network namespace would let any user bind low ports), then the context's add and drop.
absl::StatusOr<std::vector<int>> Capabilities(const api::SecurityContext* sc) {
  std::set<int> keep = {kNetBindService};
  if (!sc) return std::vector<int>(keep.begin(), keep.end());
  for (const auto& name : sc->capabilities().drop()) {
    if (absl::AsciiStrToUpper(name) == "ALL") {
      keep.clear();
      continue;
    }
    auto n = CapabilityNumber(name);
    if (!n) return absl::InvalidArgumentError(fmt::format("unknown capability \"{}\"", name));
    keep.erase(*n);
  }
  for (const auto& name : sc->capabilities().add()) {
    if (absl::AsciiStrToUpper(name) == "ALL") {
      for (size_t i = 0; i < kCapabilities.size(); ++i) keep.insert(static_cast<int>(i));
      continue;
    }
    auto n = CapabilityNumber(name);
    if (!n) return absl::InvalidArgumentError(fmt::format("unknown capability \"{}\"", name));
    keep.insert(*n);
  }
  return std::vector<int>(keep.begin(), keep.end());
}

bool IsNumber(const std::string& s) {
  int64_t n = 0;
  return absl::SimpleAtoi(s, &n);
}

// The lines of an image's /etc/passwd or /etc/group, each split at ':'.
using Table = std::vector<std::vector<std::string>>;
Table Entries(const Image& image, const std::string& name) {
  Table out;
  // Only a file of the image's own (its links followed inside it), of a sane size.
  const auto path = image::LayerView(image.layers).Find(name);
  std::error_code ec;
  if (!path || !fs::is_regular_file(*path, ec) || fs::file_size(*path, ec) > (1 << 20)) {
    return out;
  }
  std::ifstream in(*path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    out.push_back(absl::StrSplit(line, ':'));
  }
  return out;
}

// Who an image says runs it; -1: unsaid.
struct ImageUser {
  int64_t uid = -1, gid = -1;
  std::vector<int64_t> groups;  // supplementary: the groups of its /etc/group that list it
};

// The image's user, "USER[:GROUP]", each a number or a name looked up in the image's own
// /etc/passwd and /etc/group as the runtime does: a user found there brings its group and
// the groups that list it; a number found nowhere is taken as it is.
absl::StatusOr<ImageUser> ResolveImageUser(const Image& image, const std::string& user) {
  ImageUser out;
  if (user.empty()) return out;
  std::vector<std::string> parts = absl::StrSplit(user, absl::MaxSplits(':', 1));
  // (An image without files has no users.)
  const auto passwd = Entries(image, "/etc/passwd");
  const auto group = Entries(image, "/etc/group");
  int64_t n = 0;
  std::string name;
  const bool numeric = absl::SimpleAtoi(parts[0], &n);
  if (numeric && n < 0) {
    return absl::InvalidArgumentError(fmt::format("image user \"{}\" is a negative UID", user));
  }
  for (const auto& e : passwd) {
    if (e.size() < 4 || !(numeric ? e[2] == parts[0] : e[0] == parts[0])) continue;
    if (!absl::SimpleAtoi(e[2], &out.uid) || !absl::SimpleAtoi(e[3], &out.gid)) continue;
    name = e[0];
    break;
  }
  if (name.empty()) {
    if (!numeric) {
      return absl::InvalidArgumentError(
          fmt::format("unable to find user {}: no matching entries in passwd file", parts[0]));
    }
    out.uid = n;
    out.gid = -1;
  }
  if (parts.size() == 2) {
    out.gid = -1;
    if (absl::SimpleAtoi(parts[1], &n)) {
      if (n < 0) {
        return absl::InvalidArgumentError(fmt::format("image user \"{}\" is a negative GID", user));
      }
      out.gid = n;
    } else {
      for (const auto& e : group) {
        if (e.size() >= 3 && e[0] == parts[1] && absl::SimpleAtoi(e[2], &n)) out.gid = n;
      }
      if (out.gid < 0) {
        return absl::InvalidArgumentError(
            fmt::format("unable to find group {}: no matching entries in group file", parts[1]));
      }
    }
  }
  if (name.empty()) return out;
  for (const auto& e : group) {
    if (e.size() < 4 || !absl::SimpleAtoi(e[2], &n) || n == out.gid) continue;
    for (absl::string_view member : absl::StrSplit(e[3], ',')) {
      if (member == name) out.groups.push_back(n);
    }
  }
  return out;
}

// Whether a child can make a mount namespace of its own here.
bool CanUnshareMounts() {
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) _exit(unshare(CLONE_NEWNS | CLONE_NEWUTS) == 0 ? 0 : 1);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool HasFilesystem(const std::string& name) {
  std::ifstream in("/proc/filesystems");
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (!f.empty() && f.back() == name) return true;
  }
  return false;
}

}  // namespace

std::string HostIsolation::Describe() const {
  std::vector<std::string> on;
  if (mount_ns) on.push_back("mount+uts namespaces (own root filesystem)");
  if (overlay) on.push_back("overlayfs (images' layers stacked)");
  if (root) on.push_back("users and capabilities");
  if (cgroups.Any()) on.push_back("cgroup v1 limits (" + cgroups.Describe() + ")");
  std::string out = on.empty() ? "none" : absl::StrJoin(on, ", ");
  if (auto missing = Missing(); !missing.empty()) {
    out += "; missing: " + absl::StrJoin(missing, ", ");
  }
  return out;
}

std::vector<std::string> HostIsolation::Missing() const {
  std::vector<std::string> out;
  if (!mount_ns) {
    out.push_back("own root filesystem (containers see the node's files)");
  }
  if (!root) out.push_back("users (containers run as the agent's user)");
  if (mount_ns && !overlay) out.push_back("overlayfs (an image's folder hides the host's)");
  if (cgroups.memory.empty())
    out.push_back("memory limits (no writable cgroup v1 memory hierarchy)");
  if (cgroups.cpu.empty())
    out.push_back("cpu limits and shares (no writable cgroup v1 cpu hierarchy)");
  if (cgroups.pids.empty()) out.push_back("pids limits (no writable cgroup v1 pids hierarchy)");
  return out;
}

HostIsolation DetectIsolation() {
  HostIsolation h;
  h.root = geteuid() == 0;
  h.mount_ns = h.root && CanUnshareMounts();
  h.overlay = h.mount_ns && HasFilesystem("overlay");
  return h;
}

absl::StatusOr<Identity> ResolveIdentity(const api::Pod& pod, const api::Container& container,
                                         const Image& image, const HostIsolation& host) {
  Identity id;
  if (!host.root) return id;  // the agent cannot change who its children are
  const api::PodSecurityContext& psc = pod.spec().security_context();
  const api::SecurityContext* sc =
      container.has_security_context() ? &container.security_context() : nullptr;
  const bool named = (sc && sc->has_run_as_user()) || psc.has_run_as_user();
  // The image's user is looked up only where it is used, as the runtime does; a uid the pod
  // names is looked up in the image's users instead (for its group and the groups listing it).
  const absl::StatusOr<ImageUser> image_user = ResolveImageUser(image, image.config.user);
  ImageUser said = image_user.value_or(ImageUser());
  if (named) {
    id.uid = sc && sc->has_run_as_user() ? sc->run_as_user() : psc.run_as_user();
    said = ResolveImageUser(image, std::to_string(id.uid)).value_or(ImageUser());
  } else {
    id.uid = said.uid >= 0 ? said.uid : kDefaultUid;
  }
  if (sc && sc->has_run_as_group()) {
    id.gid = sc->run_as_group();
  } else if (psc.has_run_as_group()) {
    id.gid = psc.run_as_group();
  } else if (said.gid >= 0) {
    id.gid = said.gid;
  } else {
    // A user the image does not name a group for has the root group, as in Kubernetes; the
    // default user has its own.
    id.gid = id.uid == kDefaultUid ? kDefaultUid : 0;
  }
  const bool non_root =
      sc && sc->has_run_as_non_root() ? sc->run_as_non_root() : psc.run_as_non_root();
  // The kubelet's words, naming the pod as it does. It checks before the runtime looks names
  // up, so an image user given by name cannot be shown to be non-root.
  std::string refusal;
  if (non_root && named && id.uid == 0) {
    refusal = "container's runAsUser breaks non-root policy";
  } else if (const std::string user = image.config.user.substr(0, image.config.user.find(':'));
             non_root && !named && !user.empty() && !IsNumber(user)) {
    refusal = fmt::format(
        "container has runAsNonRoot and image has non-numeric user ({}), cannot verify user is "
        "non-root",
        user);
  } else if (non_root && id.uid == 0) {
    refusal = "container has runAsNonRoot and image will run as root";
  }
  if (!refusal.empty()) {
    return absl::FailedPreconditionError(
        fmt::format("{} (pod: \"{}_{}({})\", container: {})", refusal, pod.metadata().name(),
                    pod.metadata().namespace_(), pod.metadata().uid(), container.name()));
  }
  if (!named && !image_user.ok()) return image_user.status();
  id.groups.assign(psc.supplemental_groups().begin(), psc.supplemental_groups().end());
  id.groups.insert(id.groups.end(), said.groups.begin(), said.groups.end());
  if (psc.has_fs_group()) id.groups.push_back(psc.fs_group());
  id.no_new_privs = sc && sc->has_allow_privilege_escalation() && !sc->allow_privilege_escalation();
  id.limit_capabilities = true;
  id.keep_all = sc && sc->privileged();
  MKUBE_ASSIGN_OR_RETURN(auto caps, Capabilities(sc));
  id.capabilities = std::move(caps);
  return id;
}

}  // namespace mkube::agent::runtime
