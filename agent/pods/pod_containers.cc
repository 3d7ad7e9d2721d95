// The pod manager's containers: adopting what an earlier agent left running, starting
// instances (planned under the lock, carried out without it), noticing exits, restarting by
// policy with back-off, probes, and stopping.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_join.h"
#include "agent/pods/pod_manager.h"
#include "agent/pods/prober.h"
#include "agent/runtime/container_spec.h"
#include "agent/runtime/sandbox.h"
#include "api/log.h"
#include "api/printers.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace mkube::agent::pods {
namespace fs = std::filesystem;

namespace {

spdlog::logger& Log() {
  static spdlog::logger& log = log::Logger("pods");
  return log;
}

bool Terminal(const api::Pod& pod) {
  return pod.status().phase() == "Succeeded" || pod.status().phase() == "Failed";
}

// The volume kinds this node can provide are emptyDir and hostPath; network disks need an
// attacher it does not have. Empty when every volume can be mounted.
std::string UnmountableVolumes(const api::Pod& pod) {
  std::vector<std::string> names, kinds;
  for (const auto& v : pod.spec().volumes()) {
    const char* kind = v.has_gce_persistent_disk()       ? "gcePersistentDisk"
                       : v.has_aws_elastic_block_store() ? "awsElasticBlockStore"
                       : v.has_rbd()                     ? "rbd"
                       : v.has_iscsi()                   ? "iscsi"
                                                         : nullptr;
    if (!kind) continue;
    names.push_back(v.name());
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.emplace_back(kind);
  }
  if (names.empty()) return "";
  return fmt::format("Unable to attach or mount volumes: unmounted volumes=[{}]: mkube-agent "
                     "cannot attach {} volumes",
                     absl::StrJoin(names, " "), absl::StrJoin(kinds, ", "));
}

}  // namespace

PodRun* PodManager::Adopt(const std::shared_ptr<const api::Pod>& pod, absl::Time now) {
  const auto& meta = pod->metadata();
  PodRun& run = runs_[meta.uid()];
  run.uid = meta.uid();
  run.ns = meta.namespace_();
  run.name = meta.name();
  run.pod = pod;
  run.sandbox = SandboxOf(meta.uid());
  run.start_time = now;
  if (auto t = api::ParseRfc3339(pod->status().start_time())) run.start_time = *t;
  run.ip = pod->spec().host_network() ? options_.node_ip : AllocateIp(pod->status().pod_ip());
  std::error_code ec;
  fs::create_directories(fs::path(run.sandbox) / "root", ec);
  for (const auto& spec : pod->spec().containers()) {
    ContainerRun c;
    c.name = spec.name();
    c.log_dir = (fs::path(run.sandbox) / "logs" / spec.name()).string();
    fs::create_directories(c.log_dir, ec);
    // A pod this node ran before it restarted keeps counting its restarts; a finished one
    // stays finished (its logs are still here).
    for (const auto& cs : pod->status().container_statuses()) {
      if (cs.name() != c.name) continue;
      c.restart_count = cs.restart_count();
      c.container_id = cs.container_id();
      c.image_id = cs.image_id();
      if (Terminal(*pod) && cs.state().has_terminated()) {
        c.last = cs.state().terminated();
        if (cs.last_state().has_terminated()) c.previous = cs.last_state().terminated();
      }
    }
    if (Terminal(*pod)) {
      c.done = true;
    } else if (auto rec = runner_->ReadRecord(c.RecordPath(c.restart_count));
               rec.ok() && (runner_->Alive(*rec) || runner_->ReadExit(c.ExitPath(c.restart_count)))) {
      // Started by this node before the agent restarted: still running (or ended while the
      // agent was away, which the next round reports).
      c.pid = rec->pid;
      c.monitor = rec->monitor;
      c.adopted = true;
      c.started_at = absl::FromUnixSeconds(rec->started_unix);
      c.env = rec->env;
      c.dir = rec->dir;
      c.isolated = rec->isolated;
      c.identity = rec->identity;
      c.cgroups = rec->cgroups;
      // Probed again at once: it has been running all along (so it has started).
      c.startup.ok = c.liveness.ok = true;
      c.startup.next = c.liveness.next = c.readiness.next = now;
      Log().info("pod {}/{}: container {} adopted (pid {})", run.ns, run.name, c.name, c.pid);
    }
    run.containers.push_back(std::move(c));
  }
  if (auto pause = runner_->ReadRecord(run.sandbox + "/pause.pid");
      pause.ok() && runner_->Alive(*pause)) {
    run.pause = *pause;
    run.pause_adopted = true;
  }
  if (!Terminal(*pod)) OpenHostPorts(&run);
  run.mount_error = UnmountableVolumes(*pod);
  if (!run.mount_error.empty() && !Terminal(*pod)) {
    for (auto& c : run.containers) c.waiting_message = run.mount_error;
    events_->Record(*pod, "Warning", "FailedMount", run.mount_error);
    Log().info("pod {}/{}: {}", run.ns, run.name, run.mount_error);
  }
  Log().info("pod {}/{}: adopted (uid {}, ip {})", run.ns, run.name, run.uid, run.ip);
  return &run;
}

void PodManager::BeginTerminating(PodRun* run, int64_t grace_seconds, absl::Time now) {
  run->terminating = true;
  run->kill_at = now + absl::Seconds(std::max<int64_t>(0, grace_seconds));
  for (auto& c : run->containers) {
    if (!c.Running()) continue;
    runner_->Signal(c.pid, grace_seconds > 0 ? SIGTERM : SIGKILL);
    if (!run->gone) events_->Record(*run->pod, "Normal", "Killing", "Stopping container " + c.name);
  }
  Log().info("pod {}/{}: stopping (grace {}s)", run->ns, run->name, grace_seconds);
}

void PodManager::ProbeLoop() {
  struct Due {
    std::string uid, container, kind;
    pid_t pid;
    api::Probe probe;
    api::Container spec;
    ProbeTarget target;
  };
  const auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  for (;;) {
    std::vector<Due> due;
    std::set<std::string> probed;  // keys of the pods probed
    {
      absl::MutexLock lock(&mu_);
      if (clock_->AwaitWithTimeout(&mu_, absl::Condition(&stopping), absl::Milliseconds(100))) {
        return;
      }
      const absl::Time now = clock_->Now();
      for (auto& entry : runs_) {
        // Not a structured binding: `add` below captures these.
        const std::string& uid = entry.first;
        PodRun& run = entry.second;
        if (run.terminating || run.gone) continue;
        for (auto& c : run.containers) {
          if (!c.Running() || c.kill_at != absl::InfiniteFuture()) continue;  // not while killed
          const api::Container* spec = run.Spec(c.name);
          if (!spec) continue;
          auto add = [&](const char* kind, const api::Probe& probe) {
            Due d{uid,
                  c.name,
                  kind,
                  c.pid,
                  probe,
                  *spec,
                  {run.ip, {c.env, c.dir, c.pid, c.isolated, c.identity, c.cgroups}, nullptr}};
            due.push_back(std::move(d));
          };
          if (spec->has_startup_probe() && !c.startup.ok) {
            if (now >= c.startup.next) add("Startup", spec->startup_probe());
            continue;  // the others wait until it succeeds
          }
          if (spec->has_liveness_probe() && now >= c.liveness.next) add("Liveness", spec->liveness_probe());
          if (spec->has_readiness_probe() && now >= c.readiness.next) add("Readiness", spec->readiness_probe());
        }
      }
    }
    for (auto& d : due) {
      d.target.container = &d.spec;
      const absl::Status result = RunProbe(d.probe, d.target);
      absl::MutexLock lock(&mu_);
      auto it = runs_.find(d.uid);
      if (it == runs_.end()) continue;
      ContainerRun* c = it->second.Find(d.container);
      if (!c || c->pid != d.pid) continue;  // that instance is gone: its result is moot
      ApplyProbe(c, &it->second, d.kind, d.probe, result, clock_->Now());
      probed.insert(it->second.ns + "/" + it->second.name);
    }
    for (const auto& key : probed) queue_.Add(key);
    // Monitors exit just after their container: reaped here too, as pods that are done are
    // not synced again.
    absl::MutexLock lock(&mu_);
    ReapMonitors();
  }
}

void PodManager::ApplyProbe(ContainerRun* c, PodRun* run, const std::string& kind,
                            const api::Probe& probe, const absl::Status& result, absl::Time now) {
  ProbeState& st = kind == "Startup" ? c->startup : kind == "Liveness" ? c->liveness : c->readiness;
  const ProbeTiming timing = TimingOf(probe);
  st.next = now + timing.period;
  if (result.ok()) {
    st.failures = 0;
    if (++st.successes >= timing.success_threshold) st.ok = true;
    return;
  }
  st.successes = 0;
  ++st.failures;
  events_->Record(*run->pod, "Warning", "Unhealthy",
                  fmt::format("{} probe failed: {}", kind, std::string(result.message())));
  if (st.failures < timing.failure_threshold) return;
  st.ok = false;
  if (kind == "Readiness") return;
  // A failed liveness or startup probe: the container is killed, and restarted by its policy.
  const int64_t grace = probe.has_termination_grace_period_seconds()
                            ? probe.termination_grace_period_seconds()
                            : run->pod->spec().termination_grace_period_seconds();
  events_->Record(*run->pod, "Normal", "Killing",
                  fmt::format("Container {} failed {} probe, will be restarted", c->name,
                              kind == "Liveness" ? "liveness" : "startup"));
  runner_->Signal(c->pid, grace > 0 ? SIGTERM : SIGKILL);
  c->kill_at = now + absl::Seconds(std::max<int64_t>(0, grace));
}

std::optional<runtime::ExitInfo> PodManager::Ended(ContainerRun* c) {
  if (auto exit = runner_->ReadExit(c->ExitPath(c->restart_count))) {
    if (!c->adopted) monitors_.push_back(c->monitor);  // it exits right after writing
    return exit;
  }
  // No record: the monitor still waits for it, unless the monitor itself was killed (and the
  // container with it).
  if (!runner_->MonitorGone(c->monitor, c->adopted)) return std::nullopt;
  if (auto exit = runner_->ReadExit(c->ExitPath(c->restart_count))) return exit;
  Log().warn("container {}: its monitor (pid {}) is gone without an exit record", c->name,
               c->monitor);
  return runtime::ExitInfo{.exit_code = 128 + SIGKILL, .signal = SIGKILL};
}

void PodManager::Step(PodRun* run, absl::Time now, Work* work) {
  for (auto& c : run->containers) {
    if (c.Running()) {
      if (auto exit = Ended(&c)) {
        runner_->Signal(c.pid, SIGKILL);  // the container ends with its first process
        api::ContainerStateTerminated t;
        t.set_exit_code(exit->exit_code);
        t.set_signal(exit->signal);
        t.set_reason(!exit->reason.empty()    ? exit->reason
                     : !exit->message.empty() ? "StartError"
                     : exit->exit_code == 0   ? "Completed"
                                              : "Error");
        t.set_message(exit->message);
        t.set_started_at(Rfc3339(c.started_at));
        t.set_finished_at(Rfc3339(now));
        t.set_container_id(c.container_id);
        c.Ended(std::move(t));
        c.pid = 0;
        Log().info("pod {}/{}: container {} exited with {}", run->ns, run->name, c.name,
                     exit->exit_code);
        AfterExit(run, &c, now);
      } else if ((run->terminating && now >= run->kill_at) || now >= c.kill_at) {
        runner_->Signal(c.pid, SIGKILL);
      }
    }
    if (run->terminating) {
      if (!c.Running()) c.done = true;
      continue;
    }
    if (!run->fresh && run->mount_error.empty() && !c.Running() && !c.done &&
        now >= c.next_start) {
      PlanStart(run, &c, now, work);
    }
    const api::Container* spec = run->Spec(c.name);
    if (spec && c.waiting_reason == "ErrImagePull" && now >= c.pull_failed_at + absl::Seconds(1)) {
      c.waiting_reason = "ImagePullBackOff";
      c.waiting_message = fmt::format("Back-off pulling image \"{}\"", spec->image());
      events_->Record(*run->pod, "Normal", "BackOff", c.waiting_message);
      events_->Record(*run->pod, "Warning", "Failed", "Error: ImagePullBackOff");
    }
  }
}

void PodManager::AfterExit(PodRun* run, ContainerRun* c, absl::Time now) {
  if (run->terminating) {
    c->done = true;
    return;
  }
  const std::string& policy = run->pod->spec().restart_policy();
  const bool failed = c->last && c->last->exit_code() != 0;
  if (policy == "Never" || (policy == "OnFailure" && !failed)) {
    c->done = true;
    return;
  }
  if (now - c->started_at >= options_.backoff.reset_after) c->backoff = absl::ZeroDuration();
  if (c->backoff == absl::ZeroDuration()) {
    c->next_start = now;  // the first restart is immediate
    c->backoff = options_.backoff.initial;
    return;
  }
  c->next_start = now + c->backoff;
  c->waiting_reason = "CrashLoopBackOff";
  events_->Record(*run->pod, "Warning", "BackOff",
                  fmt::format("Back-off restarting failed container {} in pod {}_{}({})", c->name,
                              run->name, run->ns, run->uid));
  c->waiting_message = fmt::format("back-off {} restarting failed container={} pod={}_{}({})",
                                   absl::FormatDuration(c->backoff), c->name, run->name, run->ns,
                                   run->uid);
  c->backoff = std::min(c->backoff * 2, options_.backoff.max);
}

void PodManager::ReapMonitors() {
  std::erase_if(monitors_, [this](pid_t m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return runner_->MonitorGone(m, false);
  });
}

void PodManager::PlanStart(PodRun* run, ContainerRun* c, absl::Time now, Work* work) {
  const api::Container* spec = run->Spec(c->name);
  if (!spec) return;
  const std::string& policy = spec->image_pull_policy();
  const bool present = images_->Present(spec->image());
  if (policy == "Never" && !present) {
    c->waiting_reason = "ErrImageNeverPull";
    c->waiting_message = fmt::format(
        "Container image \"{}\" is not present with pull policy of Never", spec->image());
    c->next_start = now + options_.backoff.initial;
    events_->Record(*run->pod, "Warning", "ErrImageNeverPull", c->waiting_message);
    return;
  }
  Launch l;
  l.uid = run->uid;
  l.pod = run->pod;
  l.sandbox = run->sandbox;
  l.container = c->name;
  l.spec = *spec;
  l.always = policy == "Always";
  l.pull = l.always || !present;
  if (l.pull) {
    events_->Record(*run->pod, "Normal", "Pulling", fmt::format("Pulling image \"{}\"", spec->image()));
  }
  l.pod_name = run->name;
  l.ip = run->ip;
  l.instance = c->last ? c->restart_count + 1 : c->restart_count;
  l.process.dir = runtime::ContainerDir(*spec, (fs::path(run->sandbox) / "root").string());
  l.process.log_path = c->LogPath(l.instance);
  l.record_path = c->RecordPath(l.instance);
  l.exit_path = c->ExitPath(l.instance);
  work->launches.push_back(std::move(l));
}

void PodManager::Carry(Launch* l) {
  const absl::Time began = clock_->Now();
  l->image = images_->Pull(l->spec.image(), l->always);
  l->pull_took = clock_->Now() - began;
  if (!l->image.ok()) return;
  const runtime::HostIsolation& host = options_.isolation;
  // Isolated, the image's files are at the root of the container's own filesystem.
  runtime::Image seen = *l->image;
  if (host.mount_ns) seen.root = "/";
  l->process.argv = runtime::ContainerArgv(l->spec, seen);
  l->process.env = runtime::ContainerEnv(l->spec, seen, l->pod_name, l->ip);
  if (auto st = Sandbox(l, host); !st.ok()) {
    l->config = st;
    return;
  }
  if (host.mount_ns && !l->process.argv.empty()) {
    // Looked up where the container will look (not found: a StartError, as a runtime says).
    auto program =
        runtime::ResolveInSandbox(l->process.argv[0], l->process.env, l->process.sandbox);
    if (!program.ok()) {
      l->record = program.status();
      return;
    }
    l->process.program = *program;
  }
  std::error_code ec;
  if (!host.mount_ns) fs::create_directories(l->process.dir, ec);
  l->record = runner_->Start(l->process, l->record_path, l->exit_path);
}

pid_t PodManager::EnsurePause(const std::string& uid, const std::string& sandbox,
                              const api::Pod& pod) {
  {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(uid);
    if (it == runs_.end()) return 0;
    if (it->second.pause.pid > 0 && runner_->Alive(it->second.pause)) return it->second.pause.pid;
  }
  runtime::ProcessSpec spec;
  spec.argv = {"pause"};
  spec.program = "pause";
  spec.pause = true;
  spec.dir = "/";
  spec.log_path = sandbox + "/pause.log";
  spec.sandbox.isolated = true;
  spec.sandbox.root = sandbox + "/rootfs/.pause";
  spec.sandbox.hostname = pod.metadata().name();
  spec.sandbox.identity.uid = spec.sandbox.identity.gid = runtime::kDefaultUid;
  spec.sandbox.identity.limit_capabilities = true;
  std::error_code ec;
  fs::create_directories(spec.sandbox.root, ec);
  auto rec = runner_->Start(spec, sandbox + "/pause.pid", sandbox + "/pause.exit");
  if (!rec.ok()) {
    Log().warn("pod {}: cannot start the holder of its PID namespace: {}", uid,
               rec.status().ToString());
    return 0;
  }
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(uid);
  if (it == runs_.end()) {
    runner_->Signal(rec->pid, SIGKILL);
    monitors_.push_back(rec->monitor);
    return 0;
  }
  it->second.pause = *rec;
  it->second.pause_adopted = false;
  return rec->pid;
}

absl::Status PodManager::Sandbox(Launch* l, const runtime::HostIsolation& host) {
  auto identity = runtime::ResolveIdentity(*l->pod, l->spec, *l->image, host);
  if (!identity.ok()) return identity.status();
  l->process.sandbox.identity = *identity;
  if (host.cgroups.Any()) {
    const runtime::CgroupPlan plan =
        runtime::PlanCgroups(host.cgroups, *l->pod, l->spec, options_.pod_max_pids);
    if (auto st = runtime::ApplyCgroups(plan); !st.ok()) return st;
    l->process.sandbox.cgroups = plan.join;
    l->process.sandbox.memory_cgroup = plan.memory;
  }
  if (!host.mount_ns) return absl::OkStatus();
  runtime::SandboxInputs in;
  in.pod = l->pod.get();
  in.container = &l->spec;
  in.image = &*l->image;
  in.root = (fs::path(l->sandbox) / "rootfs" / l->container).string();
  in.volumes_dir = (fs::path(l->sandbox) / "volumes").string();
  in.pod_ip = l->ip;
  in.identity = *identity;
  in.overlay = host.overlay;
  auto sandbox = runtime::BuildSandbox(in);
  if (!sandbox.ok()) return sandbox.status();
  std::error_code ec;
  fs::create_directories(in.root, ec);
  if (ec) return absl::InternalError(fmt::format("mkdir {}: {}", in.root, ec.message()));
  if (l->pause > 0) sandbox->join_pid_ns = fmt::format("/proc/{}/ns/pid", l->pause);
  sandbox->cgroups = std::move(l->process.sandbox.cgroups);
  sandbox->memory_cgroup = std::move(l->process.sandbox.memory_cgroup);
  l->process.sandbox = std::move(*sandbox);
  l->process.dir = runtime::ContainerDir(l->spec, "/");
  return absl::OkStatus();
}

void PodManager::Launched(Launch& l, absl::Time now) {
  auto it = runs_.find(l.uid);
  if (it == runs_.end()) return;
  PodRun* run = &it->second;
  ContainerRun* c = run->Find(l.container);
  if (!c) return;
  const std::string& image = l.spec.image();
  if (!l.image.ok()) {
    c->pull_backoff = c->pull_backoff == absl::ZeroDuration()
                          ? options_.backoff.initial
                          : std::min(c->pull_backoff * 2, options_.backoff.max);
    c->waiting_reason = "ErrImagePull";
    c->waiting_message = fmt::format("Failed to pull image \"{}\": {}", image,
                                     std::string(l.image.status().message()));
    c->pull_failed_at = now;
    c->next_start = now + c->pull_backoff;
    events_->Record(*run->pod, "Warning", "Failed", c->waiting_message);
    events_->Record(*run->pod, "Warning", "Failed", "Error: ErrImagePull");
    Log().info("pod {}/{}: {}", run->ns, run->name, c->waiting_message);
    return;
  }
  events_->Record(
      *run->pod, "Normal", "Pulled",
      l.pull ? fmt::format("Successfully pulled image \"{}\" in {}", image,
                           absl::FormatDuration(absl::Trunc(l.pull_took, absl::Milliseconds(1))))
             : fmt::format("Container image \"{}\" already present on machine", image));
  c->pull_backoff = absl::ZeroDuration();
  c->image_id = l.image->ref.String();
  if (!l.config.ok()) {
    // As the kubelet: the container is not made; the pod is looked at again after a while.
    c->waiting_reason = "CreateContainerConfigError";
    c->waiting_message = std::string(l.config.message());
    c->next_start = now + options_.backoff.initial;
    events_->Record(*run->pod, "Warning", "Failed", "Error: " + c->waiting_message);
    Log().info("pod {}/{}: container {}: {}", run->ns, run->name, c->name, c->waiting_message);
    return;
  }
  c->restart_count = l.instance;
  c->container_id = fmt::format("mkube://{}/{}/{}", run->uid, c->name, c->restart_count);
  c->env = l.process.env;
  c->dir = l.process.dir;
  c->isolated = l.process.sandbox.isolated;
  c->identity = l.process.sandbox.identity;
  c->cgroups = l.process.sandbox.cgroups;
  c->started_at = now;
  if (!l.record.ok()) {
    api::ContainerStateTerminated t;
    t.set_exit_code(128);
    t.set_reason("StartError");
    t.set_message(std::string(l.record.status().message()));
    t.set_started_at(Rfc3339(now));
    t.set_finished_at(Rfc3339(now));
    t.set_container_id(c->container_id);
    c->Ended(std::move(t));
    Log().info("pod {}/{}: container {} failed to start: {}", run->ns, run->name, c->name,
                 l.record.status().ToString());
    events_->Record(*run->pod, "Warning", "Failed",
                    "Error: " + std::string(l.record.status().message()));
    AfterExit(run, c, now);
    return;
  }
  c->pid = l.record->pid;
  c->monitor = l.record->monitor;
  c->adopted = false;
  c->kill_at = absl::InfiniteFuture();
  auto arm = [&](ProbeState* st, const api::Probe* probe, bool ok) {
    *st = ProbeState();
    st->ok = ok;
    if (probe) st->next = now + TimingOf(*probe).initial_delay;
  };
  const api::Container& spec = l.spec;
  arm(&c->startup, spec.has_startup_probe() ? &spec.startup_probe() : nullptr, false);
  arm(&c->liveness, spec.has_liveness_probe() ? &spec.liveness_probe() : nullptr, true);
  arm(&c->readiness, spec.has_readiness_probe() ? &spec.readiness_probe() : nullptr, false);
  events_->Record(*run->pod, "Normal", "Created", "Created container " + c->name);
  events_->Record(*run->pod, "Normal", "Started", "Started container " + c->name);
  c->waiting_reason.clear();
  c->waiting_message.clear();
  Log().info("pod {}/{}: container {} started (pid {})", run->ns, run->name, c->name, c->pid);
}

}  // namespace mkube::agent::pods
