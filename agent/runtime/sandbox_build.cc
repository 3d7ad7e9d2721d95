// A container's root, worked out as a list of steps (sandbox.h); mkube-monitor carries them
// out in the container's mount namespace (sandbox_enter.h).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "agent/image/layer_view.h"
#include "agent/runtime/process.h"
#include "agent/runtime/sandbox.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::runtime {
namespace fs = std::filesystem;

namespace {

using Kind = MountStep::Kind;

// Names at the top of a tmpfs root the sandbox makes itself; an image's own are not used.
const std::set<std::string> kReserved = {"etc", "proc", "dev", "tmp", "sys", "run"};
constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};

std::string Join(const std::string& a, const std::string& b) {
  return (fs::path(a) / fs::path(b).relative_path()).lexically_normal().string();
}

// A node path with its links resolved on the node: the monitor looks sources up from inside
// the container's root, where a link of the node's would lead elsewhere.
std::string OnNode(const std::string& path) {
  std::error_code ec;
  fs::path resolved = fs::canonical(path, ec);
  return ec ? path : resolved.string();
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

std::string HostsFile(const std::string& ip, const std::string& hostname) {
  std::string out =
      "# mkube-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost "
      "ip6-loopback\n";
  if (!ip.empty()) out += fmt::format("{}\t{}\n", ip, hostname);
  return out;
}

// The pod's hostname: spec.hostname, else its name (at most 63 characters, as Kubernetes).
std::string Hostname(const api::Pod& pod) {
  std::string h = pod.spec().hostname().empty() ? pod.metadata().name() : pod.spec().hostname();
  if (h.size() > 63) h.resize(63);
  while (!h.empty() && (h.back() == '-' || h.back() == '.')) h.pop_back();
  return h;
}

// /etc: the image's own when the root is layered, with the pod's hosts and hostname, the users
// root and nobody where the image names none, and the node's resolver.
void AddEtc(const SandboxInputs& in, const std::string& hostname, std::vector<MountStep>* steps) {
  const image::LayerView files(in.image->layers);
  auto image_has = [&](const char* name) {
    return in.overlay && files.Find(std::string("/etc/") + name, false).has_value();
  };
  if (!image_has("passwd")) {
    steps->push_back({Kind::kFile,
                      "root:x:0:0:root:/root:/bin/sh\n"
                      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                      "/etc/passwd", false});
  }
  if (!image_has("group")) {
    steps->push_back({Kind::kFile, "root:x:0:\nnogroup:x:65534:\n", "/etc/group", false});
  }
  steps->push_back({Kind::kFile, HostsFile(in.pod_ip, hostname), "/etc/hosts", false});
  steps->push_back({Kind::kFile, hostname + "\n", "/etc/hostname", false});
  const std::string resolver = Join(in.host_root, "etc/resolv.conf");
  if (Exists(resolver)) steps->push_back({Kind::kBind, OnNode(resolver), "/etc/resolv.conf", true});
}

void AddDev(std::vector<MountStep>* steps) {
  steps->push_back({Kind::kTmpfs, "mode=0755,size=64k", "/dev", false});
  for (const char* name : kDevices) {
    const std::string host = std::string("/dev/") + name;
    if (Exists(host)) steps->push_back({Kind::kDevice, host, host, false});
  }
  steps->push_back({Kind::kSymlink, "/proc/self/fd", "/dev/fd", false});
  steps->push_back({Kind::kSymlink, "/proc/self/fd/0", "/dev/stdin", false});
  steps->push_back({Kind::kSymlink, "/proc/self/fd/1", "/dev/stdout", false});
  steps->push_back({Kind::kSymlink, "/proc/self/fd/2", "/dev/stderr", false});
  steps->push_back({Kind::kTmpfs, "mode=1777,size=64m", "/dev/shm", false});
  // Where exec with a terminal shows the node's terminal it was given (container_exec.cc).
  steps->push_back({Kind::kTmpfs, "mode=0755,size=4k", "/dev/pts", false});
}

absl::Status AddVolumes(const SandboxInputs& in, std::vector<MountStep>* steps) {
  std::map<std::string, const api::Volume*> volumes;
  for (const auto& v : in.pod->spec().volumes()) volumes[v.name()] = &v;
  for (const auto& m : in.container->volume_mounts()) {
    auto it = volumes.find(m.name());
    if (it == volumes.end()) {
      return absl::FailedPreconditionError(
          fmt::format("volume \"{}\" of mount {} is not in the pod", m.name(), m.mount_path()));
    }
    MKUBE_ASSIGN_OR_RETURN(auto source, PrepareVolume(*it->second, in.volumes_dir));
    std::string host = source;
    if (!m.sub_path().empty()) {
      const fs::path sub = fs::path(m.sub_path()).lexically_normal();
      if (sub.is_absolute() || *sub.begin() == "..") {
        return absl::FailedPreconditionError(
            fmt::format("subPath \"{}\" of volume \"{}\" must be a relative path inside it",
                        m.sub_path(), m.name()));
      }
      host = Join(host, sub.string());
      std::error_code ec;
      if (!fs::exists(host, ec)) {
        fs::create_directories(host, ec);
        chmod(host.c_str(), 0777);
      }
    }
    steps->push_back({Kind::kBind, OnNode(host), Join("/", m.mount_path()), m.read_only()});
  }
  return absl::OkStatus();
}

// The host paths a path inside the sandbox can be read at (none when it lies only in memory
// of the sandbox's own: a tmpfs, /proc, a device). `..` stops at the sandbox's root, as it
// does inside.
std::vector<std::string> HostPaths(const SandboxSpec& spec, const std::string& raw, int depth) {
  if (depth > 8) return {};
  const std::string path = fs::path(raw).lexically_normal().string();
  const MountStep* best = nullptr;
  for (const auto& s : spec.steps) {
    if (s.kind == Kind::kFile) continue;
    const bool under = path == s.target || (path.rfind(s.target + "/", 0) == 0);
    if (under && (!best || s.target.size() >= best->target.size())) best = &s;
  }
  if (!best) {
    // The image's own file, its links followed inside the image.
    auto found = image::LayerView(spec.image_layers).Find(path);
    return found ? std::vector{*found} : std::vector<std::string>{};
  }
  const std::string rest = path.substr(best->target.size());
  switch (best->kind) {
    case Kind::kBind:
      return {best->source + rest};
    case Kind::kSymlink: {  // followed from where it is
      const fs::path link(best->source);
      const std::string to = link.is_absolute()
                                 ? link.string()
                                 : (fs::path(best->target).parent_path() / link).string();
      return HostPaths(spec, to + rest, depth + 1);
    }
    default:  // a tmpfs, /proc or a device: nothing of the host's or the image's
      return {};
  }
}

}  // namespace

absl::StatusOr<std::string> PrepareVolume(const api::Volume& volume,
                                          const std::string& volumes_dir) {
  std::error_code ec;
  if (volume.has_host_path()) {
    const std::string& path = volume.host_path().path();
    const std::string& type = volume.host_path().type();
    auto fail = [&](const std::string& why) {
      return absl::FailedPreconditionError(fmt::format(
          "MountVolume.SetUp failed for volume \"{}\" : hostPath type check failed: {} {}",
          volume.name(), path, why));
    };
    if (type == "DirectoryOrCreate" && !fs::exists(path, ec)) {
      fs::create_directories(path, ec);
      if (ec) return fail("cannot be created: " + ec.message());
      fs::permissions(path, fs::perms(0755), ec);
    } else if (type == "FileOrCreate" && !fs::exists(path, ec)) {
      fs::create_directories(fs::path(path).parent_path(), ec);
      std::ofstream(path, std::ios::app);
      if (!fs::exists(path, ec)) return fail("cannot be created");
    }
    const bool exists = fs::exists(path, ec);
    if ((type == "Directory" || type == "DirectoryOrCreate") && !fs::is_directory(path, ec)) {
      return fail("is not a directory");
    }
    if ((type == "File" || type == "FileOrCreate") && !fs::is_regular_file(path, ec)) {
      return fail("is not a file");
    }
    if (type == "Socket" && !fs::is_socket(path, ec)) return fail("is not a socket");
    if (type == "CharDevice" && !fs::is_character_file(path, ec)) {
      return fail("is not a character device");
    }
    if (type == "BlockDevice" && !fs::is_block_file(path, ec)) return fail("is not a block device");
    if (!exists) {
      // Unset type: mounted as it is, so it must be there (Kubernetes would create a folder
      // through the runtime; a missing path is more likely a mistake here).
      return fail("does not exist");
    }
    return path;
  }
  // An emptyDir (the only other kind a pod that got this far has): a folder any of the pod's
  // users can write, as the kubelet makes it.
  const std::string dir = Join(volumes_dir, volume.name());
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(fmt::format("MountVolume.SetUp failed for volume \"{}\" : {}",
                                           volume.name(), ec.message()));
  }
  chmod(dir.c_str(), 0777);
  return dir;
}

absl::StatusOr<SandboxSpec> BuildSandbox(const SandboxInputs& in) {
  SandboxSpec spec;
  spec.isolated = true;
  spec.root = in.root;
  spec.hostname = Hostname(*in.pod);
  spec.identity = in.identity;
  const api::Container& c = *in.container;
  spec.read_only_root =
      c.has_security_context() && c.security_context().read_only_root_filesystem();
  if (in.overlay) {
    // The root is the image's layers under a writable layer.
    for (const auto& layer : in.image->layers) {
      if (layer.find_first_of(":,") != std::string::npos) {
        return absl::FailedPreconditionError(fmt::format(
            "overlayfs cannot stack the image's folder {}: its path holds ':' or ','", layer));
      }
    }
    spec.image_layers = in.image->layers;
  } else if (in.image->root.empty()) {
    return absl::FailedPreconditionError(
        fmt::format("image {} is in layers, which only overlayfs stacks", in.image->ref.String()));
  } else {
    // Without overlayfs, a tmpfs holding read-only binds of the entries of the image's folder.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(in.image->root, ec)) {
      const std::string name = e.path().filename().string();
      if (kReserved.contains(name)) continue;
      // A link stays a link: bound, it would be followed on the node.
      if (e.is_symlink(ec)) {
        spec.steps.push_back({Kind::kSymlink, fs::read_symlink(e.path(), ec).string(), "/" + name});
      } else {
        spec.steps.push_back({Kind::kBind, e.path().string(), "/" + name, true});
      }
    }
  }
  AddEtc(in, spec.hostname, &spec.steps);
  spec.steps.push_back({Kind::kProc, "", "/proc", false});
  AddDev(&spec.steps);
  spec.steps.push_back({Kind::kTmpfs, "mode=1777", "/tmp", false});
  MKUBE_RETURN_IF_ERROR(AddVolumes(in, &spec.steps));
  return spec;
}

absl::StatusOr<std::string> ResolveInSandbox(const std::string& name,
                                             const std::vector<std::string>& env,
                                             const SandboxSpec& spec) {
  if (name.empty()) return absl::InvalidArgumentError("empty command");
  auto executable = [&](const std::string& path) {
    for (const auto& host : HostPaths(spec, path, 0)) {
      struct stat st;
      if (stat(host.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) return true;
    }
    return false;
  };
  if (name.find('/') != std::string::npos) {
    if (name[0] != '/' || executable(name)) return name;  // relative: left to the container
    return absl::NotFoundError(
        fmt::format("exec: \"{}\": stat {}: no such file or directory", name, name));
  }
  for (const auto& candidate : PathCandidates(name, env)) {
    if (candidate[0] == '/' && executable(candidate)) return candidate;
  }
  return absl::NotFoundError(fmt::format("exec: \"{}\": executable file not found in $PATH", name));
}

}  // namespace mkube::agent::runtime
