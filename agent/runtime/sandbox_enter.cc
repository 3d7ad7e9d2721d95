#include "agent/runtime/sandbox_enter.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"

namespace mkube::agent::runtime {
namespace fs = std::filesystem;

PreparedIdentity PrepareIdentity(const Identity& id) {
  PreparedIdentity p;
  p.change_uid = id.uid >= 0;
  p.change_gid = id.gid >= 0;
  p.uid = static_cast<uid_t>(std::max<int64_t>(id.uid, 0));
  p.gid = static_cast<gid_t>(std::max<int64_t>(id.gid, 0));
  // A new user drops the agent's supplementary groups, keeping only those asked for.
  p.set_groups = p.change_uid || p.change_gid || !id.groups.empty();
  for (int64_t g : id.groups) p.groups.push_back(static_cast<gid_t>(g));
  p.no_new_privs = id.no_new_privs;
  p.limit_capabilities = id.limit_capabilities;
  p.keep_all = id.keep_all;
  for (int c : id.capabilities) {
    if (c >= 0 && c < 64) p.kept |= uint64_t{1} << c;
  }
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int last = 0;
  if (in >> last && last > 0 && last < 64) p.last_cap = last;
  return p;
}

bool ApplyIdentity(const PreparedIdentity& id, const char** step) {
  const bool limit = id.limit_capabilities && !id.keep_all;
  if (limit) {
    for (int c = 0; c <= id.last_cap; ++c) {
      if (!(id.kept & (uint64_t{1} << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 &&
          errno != EINVAL) {
        *step = "drop capabilities from the bounding set";
        return false;
      }
    }
  }
  if (id.set_groups && syscall(SYS_setgroups, id.groups.size(),
                               id.groups.empty() ? nullptr : id.groups.data()) != 0) {
    *step = "setgroups";
    return false;
  }
  if (id.change_gid && syscall(SYS_setresgid, id.gid, id.gid, id.gid) != 0) {
    *step = "setgid";
    return false;
  }
  if (limit && id.change_uid && id.uid != 0 && id.kept != 0) {
    prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);  // the kept ones survive the change of user
  }
  if (id.change_uid && syscall(SYS_setresuid, id.uid, id.uid, id.uid) != 0) {
    *step = "setuid";
    return false;
  }
  if (limit) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    for (int i = 0; i < 2; ++i) {
      const auto bits = static_cast<uint32_t>(id.kept >> (32 * i));
      data[i].effective = data[i].permitted = data[i].inheritable = bits;
    }
    if (syscall(SYS_capset, &header, data) != 0) {
      *step = "capset";
      return false;
    }
    // A user other than root keeps them across exec only as ambient capabilities.
    if (id.change_uid && id.uid != 0) {
      for (int c = 0; c <= id.last_cap; ++c) {
        if ((id.kept & (uint64_t{1} << c)) &&
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) != 0) {
          *step = "raise ambient capabilities";
          return false;
        }
      }
    }
  }
  if (id.no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *step = "set no_new_privs";
    return false;
  }
  return true;
}

namespace {

// Where the node's root is while a container's root is built (then let go of): a name no
// image can know beforehand, so that no link in it can lead there.
std::string HostMountPoint() {
  std::random_device random;
  char name[40];
  std::snprintf(name, sizeof name, "/.mkube-node-%08x%08x", random(), random());
  return name;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool MakeDirs(const std::string& path, std::string* error) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) *error = "mkdir " + path + ": " + ec.message();
  return !ec;
}

// A mount point of the same type as `source` (folder or file) at `path`.
bool MakeMountPoint(const std::string& source, const std::string& path, std::string* error) {
  struct stat st;
  if (stat(source.c_str(), &st) != 0) {
    *error = Errno("stat " + source);
    return false;
  }
  if (S_ISDIR(st.st_mode)) return MakeDirs(path, error);
  if (!MakeDirs(fs::path(path).parent_path().string(), error)) return false;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = Errno("create " + path);
    return false;
  }
  close(fd);
  return true;
}

// The longest list of lower folders named whole in an overlay's options (one page holds them
// with the upper and work folders).
constexpr size_t kMaxLowerDirs = 3072;

// The image's layers (`lower`, the topmost first) stacked by overlayfs at `path`, under a fresh
// writable layer of upper and work folders in `layer`. The upper folder takes the topmost
// layer's mode and owner, which the merged folder shows.
bool Overlay(const std::vector<std::string>& lower, const std::string& path,
             const std::string& layer, std::string* error) {
  if (!MakeDirs(path, error)) return false;
  std::string lowers = absl::StrJoin(lower, ":");
  // mount(2) reads one page of options: the folders of an image of many layers are named
  // through short links (0, 1, ...) in its layer's folder, the current one while it mounts.
  if (lowers.size() > kMaxLowerDirs) {
    const std::string links = layer + "/lower";
    if (!MakeDirs(links, error)) return false;
    std::vector<std::string> names;
    for (const auto& f : lower) {
      names.push_back(std::to_string(names.size()));
      if (symlink(f.c_str(), (links + "/" + names.back()).c_str()) != 0) {
        *error = Errno("link the lower folder " + f);
        return false;
      }
    }
    if (chdir(links.c_str()) != 0) {
      *error = Errno("enter " + links);
      return false;
    }
    lowers = absl::StrJoin(names, ":");
  }
  const std::string upper = layer + "/upper", work = layer + "/work";
  if (!MakeDirs(upper, error) || !MakeDirs(work, error)) return false;
  struct stat st;
  if (stat(lower.front().c_str(), &st) == 0 && (chmod(upper.c_str(), st.st_mode & 07777) != 0 ||
                                                chown(upper.c_str(), st.st_uid, st.st_gid) != 0)) {
    *error = Errno("set the mode of " + path + "'s layer");
    return false;
  }
  const std::string options = "lowerdir=" + lowers + ",upperdir=" + upper + ",workdir=" + work;
  if (mount("overlay", path.c_str(), "overlay", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    *error = Errno("overlay " + absl::StrJoin(lower, ":") + " at " + path);
    return false;
  }
  return true;
}

// Carries out one step at `path`, inside the container's root; the node's files are under
// `host`.
bool ApplyMountStep(const MountStep& s, const std::string& path, const std::string& host,
                    std::string* error) {
  using Kind = MountStep::Kind;
  switch (s.kind) {
    case Kind::kBind:
    case Kind::kDevice: {
      const std::string source = host + s.source;
      if (!MakeMountPoint(source, path, error)) return false;
      if (mount(source.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
        *error = Errno("bind " + s.source + " at " + s.target);
        return false;
      }
      if (s.read_only && mount(nullptr, path.c_str(), nullptr,
                               MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, nullptr) != 0) {
        *error = Errno("make " + s.target + " read-only");
        return false;
      }
      return true;
    }
    case Kind::kTmpfs:
      if (!MakeDirs(path, error)) return false;
      if (mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, s.source.c_str()) != 0) {
        *error = Errno("mount a tmpfs at " + s.target);
        return false;
      }
      return true;
    case Kind::kProc:
      if (!MakeDirs(path, error)) return false;
      if (mount("proc", path.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        *error = Errno("mount /proc");
        return false;
      }
      return true;
    case Kind::kSymlink:
      if (!MakeDirs(fs::path(path).parent_path().string(), error)) return false;
      if (symlink(s.source.c_str(), path.c_str()) != 0) {
        *error = Errno("symlink " + s.target + " -> " + s.source);
        return false;
      }
      return true;
    case Kind::kFile: {
      if (!MakeDirs(fs::path(path).parent_path().string(), error)) return false;
      // What the image has there (a link, say) is replaced, not written through.
      if (unlink(path.c_str()) != 0 && errno != ENOENT) {
        *error = Errno("replace " + s.target);
        return false;
      }
      const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) {
        *error = Errno("create " + s.target);
        return false;
      }
      const bool written =
          write(fd, s.source.data(), s.source.size()) == static_cast<ssize_t>(s.source.size());
      close(fd);
      if (!written) {
        *error = "write " + s.target;
        return false;
      }
      return true;
    }
  }
  *error = "unknown step";
  return false;
}

// As container runtimes do for all but privileged containers: the kernel's knobs under a
// container's /proc read-only, and what tells of the node's memory, keys and timers hidden.
bool MaskProc(const std::string& proc, const std::string& host, std::string* error) {
  for (const char* knob : {"sys", "sysrq-trigger", "irq", "bus", "fs"}) {
    const std::string path = proc + "/" + knob;
    if (access(path.c_str(), F_OK) != 0) continue;
    if (mount(path.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        mount(nullptr, path.c_str(), nullptr,
              MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      *error = Errno("make /proc/" + std::string(knob) + " read-only");
      return false;
    }
  }
  for (const char* secret : {"kcore", "keys", "timer_list", "sched_debug", "latency_stats"}) {
    const std::string path = proc + "/" + secret;
    if (access(path.c_str(), F_OK) != 0) continue;
    if (mount((host + "/dev/null").c_str(), path.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      *error = Errno("hide /proc/" + std::string(secret));
      return false;
    }
  }
  for (const char* folder : {"acpi", "scsi"}) {
    const std::string path = proc + "/" + folder;
    if (access(path.c_str(), F_OK) != 0) continue;
    if (mount("tmpfs", path.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              nullptr) != 0) {
      *error = Errno("hide /proc/" + std::string(folder));
      return false;
    }
  }
  return true;
}

}  // namespace

bool EnterSandbox(const SandboxSpec& spec, std::string* error) {
  if (spec.isolated) {
    if (unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0) {
      *error = Errno("unshare mount and UTS namespaces");
      return false;
    }
    // Nothing mounted here reaches the node, and nothing the node mounts later reaches here.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      *error = Errno("make mounts private");
      return false;
    }
    // A tmpfs at spec.root holds the root, or, when layered, the writable layers and the
    // overlay that is the root.
    if (mount("tmpfs", spec.root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
      *error = Errno("mount the root tmpfs at " + spec.root);
      return false;
    }
    std::string root = spec.root;
    if (!spec.image_layers.empty()) {
      root = spec.root + "/root";
      if (!Overlay(spec.image_layers, root, spec.root + "/layers/root", error)) {
        return false;
      }
    }
    // The root becomes `/` first, with the node's beneath it at `host`: every step's target is
    // then looked up inside the root, so a link the image holds leads nowhere else.
    const std::string host = HostMountPoint();
    if (!MakeDirs(root + host, error)) return false;
    if (chdir(root.c_str()) != 0 || syscall(SYS_pivot_root, ".", host.c_str() + 1) != 0 ||
        chdir("/") != 0) {
      *error = Errno("pivot_root into " + root);
      return false;
    }
    for (size_t i = 0; i < spec.steps.size(); ++i) {
      const MountStep& s = spec.steps[i];
      if (!ApplyMountStep(s, s.target, host, error)) return false;
      if (s.kind == MountStep::Kind::kProc && !spec.identity.keep_all &&
          !MaskProc(s.target, host, error)) {
        return false;
      }
    }
    // The node's root is let go of; only the overlays still hold the layers' tmpfs.
    if (umount2(host.c_str(), MNT_DETACH) != 0 || rmdir(host.c_str()) != 0) {
      *error = Errno("let go of the node's root");
      return false;
    }
    if (!spec.hostname.empty() && sethostname(spec.hostname.data(), spec.hostname.size()) != 0) {
      *error = Errno("sethostname");
      return false;
    }
    if (spec.read_only_root &&
        mount(nullptr, "/", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
              nullptr) != 0) {
      *error = Errno("make the root read-only");
      return false;
    }
  }
  const char* step = nullptr;
  if (!ApplyIdentity(PrepareIdentity(spec.identity), &step)) {
    *error = Errno(step);
    return false;
  }
  return true;
}

void ContainerNamespaces::Close() {
  for (int* fd : {&mnt, &uts, &pid}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

ContainerNamespaces OpenNamespaces(pid_t container) {
  ContainerNamespaces ns;
  ns.mnt = open(("/proc/" + std::to_string(container) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC);
  ns.uts = open(("/proc/" + std::to_string(container) + "/ns/uts").c_str(), O_RDONLY | O_CLOEXEC);
  ns.pid = open(("/proc/" + std::to_string(container) + "/ns/pid").c_str(), O_RDONLY | O_CLOEXEC);
  return ns;
}

bool JoinNamespaces(const ContainerNamespaces& ns, const char** step) {
  if (ns.uts >= 0 && setns(ns.uts, CLONE_NEWUTS) != 0) {
    *step = "join the container's UTS namespace";
    return false;
  }
  if (ns.mnt >= 0 && setns(ns.mnt, CLONE_NEWNS) != 0) {
    *step = "join the container's mount namespace";
    return false;
  }
  if (ns.pid >= 0 && setns(ns.pid, CLONE_NEWPID) != 0) {
    *step = "join the container's PID namespace";
    return false;
  }
  return true;
}

}  // namespace mkube::agent::runtime
