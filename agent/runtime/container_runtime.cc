#include "agent/runtime/container_runtime.h"

#include <signal.h>

#include <filesystem>
#include <system_error>

#include "agent/runtime/cgroups.h"
#include "agent/runtime/container_spec.h"
#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace mkube::agent::runtime {
namespace fs = std::filesystem;

namespace {

spdlog::logger& Log() {
  static spdlog::logger& log = log::Logger("pods");
  return log;
}

}  // namespace

ContainerRuntime::ContainerRuntime(ImageStore* images, ProcessRunner* runner,
                                   RuntimeOptions options)
    : images_(images), runner_(runner), options_(std::move(options)), clock_(options_.clock) {}

std::optional<ProcessRecord> ContainerRuntime::FindInstance(const std::string& record_path,
                                                            const std::string& exit_path) {
  auto rec = runner_->ReadRecord(record_path);
  if (rec.ok() && (runner_->Alive(*rec) || runner_->ReadExit(exit_path))) return *rec;
  return std::nullopt;
}

void ContainerRuntime::AddPod(const std::string& uid, const std::string& pod_dir) {
  Pause pause;
  if (auto rec = runner_->ReadRecord(pod_dir + "/pause.pid"); rec.ok() && runner_->Alive(*rec)) {
    pause.record = *rec;
    pause.adopted = true;
  }
  absl::MutexLock lock(&mu_);
  pauses_[uid] = pause;
}

void ContainerRuntime::KillPause(Pause* pause) {
  if (pause->record.pid <= 0) return;
  runner_->Signal(pause->record.pid, SIGKILL);
  if (!pause->adopted) monitors_.push_back(pause->record.monitor);
  pause->record.pid = 0;
}

void ContainerRuntime::RemovePod(const std::string& uid) {
  absl::MutexLock lock(&mu_);
  auto it = pauses_.find(uid);
  if (it == pauses_.end()) return;
  KillPause(&it->second);  // what is left in the pod's namespace goes with it
  pauses_.erase(it);
}

void ContainerRuntime::KillPauseProcesses() {
  absl::MutexLock lock(&mu_);
  for (auto& [uid, pause] : pauses_) KillPause(&pause);
}

void ContainerRuntime::RemovePodFiles(const std::string& uid, const std::string& pod_dir) {
  std::error_code ec;
  fs::remove_all(pod_dir, ec);
  RemovePodCgroups(options_.isolation.cgroups, uid);
}

void ContainerRuntime::KillLeftovers(const std::string& uid, const std::string& pod_dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(fs::path(pod_dir) / "logs", ec);
       !ec && it != fs::end(it); it.increment(ec)) {
    if (it->path().extension() != ".pid") continue;
    if (auto rec = runner_->ReadRecord(it->path().string()); rec.ok() && runner_->Alive(*rec)) {
      Log().info("pod {}: stopping process {} left from before a restart", uid, rec->pid);
      runner_->Signal(rec->pid, SIGKILL);
    }
  }
}

void ContainerRuntime::StartContainer(ContainerStart* s) {
  const absl::Time began = clock_->Now();
  s->image = images_->Pull(s->spec.image(), s->always);
  s->pull_took = clock_->Now() - began;
  if (!s->image.ok()) return;
  const HostIsolation& host = options_.isolation;
  // Isolated, the image's files are at the root of the container's own filesystem.
  Image seen = *s->image;
  if (host.mount_ns) seen.root = "/";
  s->process.argv = ContainerArgv(s->spec, seen);
  s->process.env = ContainerEnv(s->spec, seen, s->pod_name, s->ip);
  if (auto st = SetUpSandbox(s); !st.ok()) {
    s->config = st;
    return;
  }
  if (host.mount_ns && !s->process.argv.empty()) {
    // Looked up where the container will look (not found: a StartError, as a runtime says).
    auto program = ResolveInSandbox(s->process.argv[0], s->process.env, s->process.sandbox);
    if (!program.ok()) {
      s->record = program.status();
      return;
    }
    s->process.program = *program;
  }
  std::error_code ec;
  if (!host.mount_ns) fs::create_directories(s->process.dir, ec);
  s->record = runner_->Start(s->process, s->record_path, s->exit_path);
}

pid_t ContainerRuntime::EnsurePauseProcess(const std::string& uid, const std::string& pod_dir,
                                           const api::Pod& pod) {
  {
    absl::MutexLock lock(&mu_);
    auto it = pauses_.find(uid);
    if (it == pauses_.end()) return 0;
    const ProcessRecord& running = it->second.record;
    if (running.pid > 0 && runner_->Alive(running)) return running.pid;
  }
  ProcessSpec spec;
  spec.argv = {"pause"};
  spec.program = "pause";
  spec.pause = true;
  spec.dir = "/";
  spec.log_path = pod_dir + "/pause.log";
  spec.sandbox.isolated = true;
  spec.sandbox.root = pod_dir + "/rootfs/.pause";
  spec.sandbox.hostname = pod.metadata().name();
  spec.sandbox.identity.uid = spec.sandbox.identity.gid = kDefaultUid;
  spec.sandbox.identity.limit_capabilities = true;
  std::error_code ec;
  fs::create_directories(spec.sandbox.root, ec);
  auto rec = runner_->Start(spec, pod_dir + "/pause.pid", pod_dir + "/pause.exit");
  if (!rec.ok()) {
    Log().warn("pod {}: cannot start the holder of its PID namespace: {}", uid,
               rec.status().ToString());
    return 0;
  }
  absl::MutexLock lock(&mu_);
  auto it = pauses_.find(uid);
  if (it == pauses_.end()) {
    runner_->Signal(rec->pid, SIGKILL);
    monitors_.push_back(rec->monitor);
    return 0;
  }
  it->second = {*rec, false};
  return rec->pid;
}

absl::Status ContainerRuntime::SetUpSandbox(ContainerStart* s) {
  const HostIsolation& host = options_.isolation;
  MKUBE_ASSIGN_OR_RETURN(auto identity, ResolveIdentity(*s->pod, s->spec, *s->image, host));
  s->process.sandbox.identity = identity;
  if (host.cgroups.Any()) {
    const CgroupPlan plan = PlanCgroups(host.cgroups, *s->pod, s->spec, options_.pod_max_pids);
    MKUBE_RETURN_IF_ERROR(ApplyCgroups(plan));
    s->process.sandbox.cgroups = plan.join;
    s->process.sandbox.memory_cgroup = plan.memory;
  }
  if (!host.mount_ns) return absl::OkStatus();
  SandboxInputs in;
  in.pod = s->pod.get();
  in.container = &s->spec;
  in.image = &*s->image;
  in.root = (fs::path(s->pod_dir) / "rootfs" / s->container).string();
  in.volumes_dir = (fs::path(s->pod_dir) / "volumes").string();
  in.pod_ip = s->ip;
  in.identity = identity;
  in.overlay = host.overlay;
  MKUBE_ASSIGN_OR_RETURN(auto sandbox, BuildSandbox(in));
  std::error_code ec;
  fs::create_directories(in.root, ec);
  if (ec) return absl::InternalError(fmt::format("mkdir {}: {}", in.root, ec.message()));
  if (s->pause_pid > 0) sandbox.join_pid_ns = fmt::format("/proc/{}/ns/pid", s->pause_pid);
  sandbox.cgroups = std::move(s->process.sandbox.cgroups);
  sandbox.memory_cgroup = std::move(s->process.sandbox.memory_cgroup);
  s->process.sandbox = std::move(sandbox);
  // The container's workingDir, else the image's WorkingDir, else the root.
  const std::string& image_dir = s->image->config.working_dir;
  const bool image_says = s->spec.working_dir().empty() && !image_dir.empty();
  s->process.dir = image_says ? image_dir : ContainerDir(s->spec, "/");
  return absl::OkStatus();
}

std::optional<ExitInfo> ContainerRuntime::ExitOf(const std::string& container,
                                                 const std::string& exit_path, pid_t monitor,
                                                 bool adopted) {
  if (auto exit = runner_->ReadExit(exit_path)) {
    if (!adopted) {
      absl::MutexLock lock(&mu_);
      monitors_.push_back(monitor);  // it exits right after writing
    }
    return exit;
  }
  // No record: the monitor still waits for it, unless the monitor itself was killed (and the
  // container with it).
  if (!runner_->MonitorGone(monitor, adopted)) return std::nullopt;
  if (auto exit = runner_->ReadExit(exit_path)) return exit;
  Log().warn("container {}: its monitor (pid {}) is gone without an exit record", container,
             monitor);
  return ExitInfo{.exit_code = 128 + SIGKILL, .signal = SIGKILL};
}

void ContainerRuntime::ReapMonitors() {
  absl::MutexLock lock(&mu_);
  std::erase_if(monitors_, [this](pid_t m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return runner_->MonitorGone(m, false);
  });
}

}  // namespace mkube::agent::runtime
