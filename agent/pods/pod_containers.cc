// The pod workers' plans for each pod's containers: adopting what an earlier agent left
// running, starting instances (planned under the lock, carried out by the runtime without it),
// noticing exits, restarting by policy with back-off, and stopping.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_join.h"
#include "agent/pods/pod_workers.h"
#include "agent/runtime/container_spec.h"
#include "base/log.h"
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

// A terminated state for the container's instance that ran from `started` to `finished`.
api::ContainerStateTerminated Terminated(const ContainerRun& c, int exit_code,
                                         const std::string& reason, absl::Time started,
                                         absl::Time finished) {
  api::ContainerStateTerminated t;
  t.set_exit_code(exit_code);
  t.set_reason(reason);
  t.set_started_at(Rfc3339(started));
  t.set_finished_at(Rfc3339(finished));
  t.set_container_id(c.container_id);
  return t;
}

}  // namespace

void PodWorkers::Plan(const std::string& key, const std::shared_ptr<const api::Pod>& pod,
                      absl::Time now, SyncWork* work) {
  const bool ours = pod && pod->spec().node_name() == options_.node_name;
  std::vector<PodRun*> runs;
  for (auto& [uid, run] : runs_) {
    if (run.ns + "/" + run.name != key) continue;
    if ((!ours || uid != pod->metadata().uid()) && !run.gone) {
      run.gone = true;  // deleted outright (grace 0, or --force): stop what runs
      if (!run.terminating) {
        BeginTerminating(&run, run.pod->spec().termination_grace_period_seconds(), now);
      }
    }
    runs.push_back(&run);
  }
  if (ours) {
    const bool deleting = !pod->metadata().deletion_timestamp().empty();
    auto it = runs_.find(pod->metadata().uid());
    const bool ran_here = it != runs_.end() || fs::exists(PodDir(pod->metadata().uid()));
    if (deleting && !ran_here) {
      // Deleted before this node ran anything of it: it just goes.
      work->updates.push_back({ApiUpdate::kDelete, pod, {}});
    } else {
      // (A pod deleted while the agent was away is adopted too, so that what it left
      // running is stopped before it goes.)
      PodRun* run = it == runs_.end() ? Adopt(pod, now) : &it->second;
      if (it == runs_.end()) runs.push_back(run);
      run->pod = pod;
      if (deleting && !run->terminating) {
        BeginTerminating(run, pod->metadata().deletion_grace_period_seconds(), now);
      }
    }
  }
  for (PodRun* run : runs) SyncContainers(run, now, work);
  runtime_->ReapMonitors();
}

PodRun* PodWorkers::Adopt(const std::shared_ptr<const api::Pod>& pod, absl::Time now) {
  const auto& meta = pod->metadata();
  PodRun& run = runs_[meta.uid()];
  run.uid = meta.uid();
  run.ns = meta.namespace_();
  run.name = meta.name();
  run.pod = pod;
  run.pod_dir = PodDir(meta.uid());
  run.start_time = now;
  if (auto t = api::ParseRfc3339(pod->status().start_time())) run.start_time = *t;
  run.ip =
      pod->spec().host_network() ? options_.node_ip : network_->AllocateIp(pod->status().pod_ip());
  std::error_code ec;
  fs::create_directories(fs::path(run.pod_dir) / "root", ec);
  for (const auto& spec : pod->spec().containers()) {
    run.containers.push_back(AdoptContainer(run, spec, now));
  }
  runtime_->AddPod(run.uid, run.pod_dir);
  if (!Terminal(*pod)) network_->OpenHostPorts(*pod, run.ip);
  run.mount_error = UnmountableVolumes(*pod);
  if (!run.mount_error.empty() && !Terminal(*pod)) {
    for (auto& c : run.containers) c.waiting_message = run.mount_error;
    events_->Record(*pod, "Warning", "FailedMount", run.mount_error);
    Log().info("pod {}/{}: {}", run.ns, run.name, run.mount_error);
  }
  Log().info("pod {}/{}: adopted (uid {}, ip {})", run.ns, run.name, run.uid, run.ip);
  return &run;
}

ContainerRun PodWorkers::AdoptContainer(const PodRun& run, const api::Container& spec,
                                        absl::Time now) {
  const api::Pod& pod = *run.pod;
  ContainerRun c;
  c.name = spec.name();
  c.log_dir = (fs::path(run.pod_dir) / "logs" / spec.name()).string();
  std::error_code ec;
  fs::create_directories(c.log_dir, ec);
  // A pod this node ran before it restarted keeps counting its restarts; a finished one
  // stays finished (its logs are still here).
  for (const auto& cs : pod.status().container_statuses()) {
    if (cs.name() != c.name) continue;
    c.restart_count = cs.restart_count();
    c.container_id = cs.container_id();
    c.image_id = cs.image_id();
    if (Terminal(pod) && cs.state().has_terminated()) {
      c.last = cs.state().terminated();
      if (cs.last_state().has_terminated()) c.previous = cs.last_state().terminated();
    }
  }
  if (Terminal(pod)) {
    c.done = true;
  } else if (auto rec = runtime_->FindInstance(c.RecordPath(c.restart_count),
                                               c.ExitPath(c.restart_count))) {
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
    ProbeManager::ResumeProbing(&c, now);
    Log().info("pod {}/{}: container {} adopted (pid {})", run.ns, run.name, c.name, c.pid);
  }
  return c;
}

void PodWorkers::BeginTerminating(PodRun* run, int64_t grace_seconds, absl::Time now) {
  run->terminating = true;
  run->kill_at = now + absl::Seconds(std::max<int64_t>(0, grace_seconds));
  for (auto& c : run->containers) {
    if (!c.Running()) continue;
    runtime_->Signal(c.pid, grace_seconds > 0 ? SIGTERM : SIGKILL);
    if (!run->gone) events_->Record(*run->pod, "Normal", "Killing", "Stopping container " + c.name);
  }
  Log().info("pod {}/{}: stopping (grace {}s)", run->ns, run->name, grace_seconds);
}

std::optional<runtime::ExitInfo> PodWorkers::ExitOf(const ContainerRun& c) {
  return runtime_->ExitOf(c.name, c.ExitPath(c.restart_count), c.monitor, c.adopted);
}

void PodWorkers::SyncContainers(PodRun* run, absl::Time now, SyncWork* work) {
  for (auto& c : run->containers) {
    if (c.Running()) {
      if (auto exit = ExitOf(c)) {
        RecordExit(run, &c, *exit, now);
      } else if ((run->terminating && now >= run->kill_at) || now >= c.kill_at) {
        runtime_->Signal(c.pid, SIGKILL);
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

void PodWorkers::RecordExit(PodRun* run, ContainerRun* c, const runtime::ExitInfo& exit,
                            absl::Time now) {
  runtime_->Signal(c->pid, SIGKILL);  // the container ends with its first process
  api::ContainerStateTerminated t = Terminated(*c, exit.exit_code,
                                               !exit.reason.empty()    ? exit.reason
                                               : !exit.message.empty() ? "StartError"
                                               : exit.exit_code == 0   ? "Completed"
                                                                       : "Error",
                                               c->started_at, now);
  t.set_signal(exit.signal);
  t.set_message(exit.message);
  c->RecordEnd(std::move(t));
  c->pid = 0;
  Log().info("pod {}/{}: container {} exited with {}", run->ns, run->name, c->name, exit.exit_code);
  PlanRestart(run, c, now);
}

void PodWorkers::PlanRestart(PodRun* run, ContainerRun* c, absl::Time now) {
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

void PodWorkers::PlanStart(PodRun* run, ContainerRun* c, absl::Time now, SyncWork* work) {
  const api::Container* spec = run->Spec(c->name);
  if (!spec) return;
  const std::string& policy = spec->image_pull_policy();
  const bool present = runtime_->ImagePresent(spec->image());
  if (policy == "Never" && !present) {
    c->waiting_reason = "ErrImageNeverPull";
    c->waiting_message = fmt::format(
        "Container image \"{}\" is not present with pull policy of Never", spec->image());
    c->next_start = now + options_.backoff.initial;
    events_->Record(*run->pod, "Warning", "ErrImageNeverPull", c->waiting_message);
    return;
  }
  runtime::ContainerStart s;
  s.uid = run->uid;
  s.pod = run->pod;
  s.pod_dir = run->pod_dir;
  s.container = c->name;
  s.spec = *spec;
  s.always = policy == "Always";
  s.pull = s.always || !present;
  if (s.pull) {
    events_->Record(*run->pod, "Normal", "Pulling",
                    fmt::format("Pulling image \"{}\"", spec->image()));
  }
  s.pod_name = run->name;
  s.ip = run->ip;
  s.instance = c->last ? c->restart_count + 1 : c->restart_count;
  s.process.dir = runtime::ContainerDir(*spec, (fs::path(run->pod_dir) / "root").string());
  s.process.log_path = c->LogPath(s.instance);
  s.record_path = c->RecordPath(s.instance);
  s.exit_path = c->ExitPath(s.instance);
  work->starts.push_back(std::move(s));
}

void PodWorkers::RecordStart(runtime::ContainerStart& s, absl::Time now) {
  auto it = runs_.find(s.uid);
  if (it == runs_.end()) return;
  PodRun* run = &it->second;
  ContainerRun* c = run->Find(s.container);
  if (!c) return;
  const std::string& image = s.spec.image();
  if (!s.image.ok()) {
    c->pull_backoff = c->pull_backoff == absl::ZeroDuration()
                          ? options_.backoff.initial
                          : std::min(c->pull_backoff * 2, options_.backoff.max);
    c->waiting_reason = "ErrImagePull";
    c->waiting_message = fmt::format("Failed to pull image \"{}\": {}", image,
                                     std::string(s.image.status().message()));
    c->pull_failed_at = now;
    c->next_start = now + c->pull_backoff;
    events_->Record(*run->pod, "Warning", "Failed", c->waiting_message);
    events_->Record(*run->pod, "Warning", "Failed", "Error: ErrImagePull");
    Log().info("pod {}/{}: {}", run->ns, run->name, c->waiting_message);
    return;
  }
  // As the kubelet says it. Pulls here are not queued behind one another, so the time waited
  // is the pull's own (a pull that joined another's download waited for all of it).
  const std::string took = absl::FormatDuration(absl::Trunc(s.pull_took, absl::Milliseconds(1)));
  events_->Record(*run->pod, "Normal", "Pulled",
                  s.pull ? fmt::format("Successfully pulled image \"{}\" in {} ({} including "
                                       "waiting). Image size: {} bytes.",
                                       image, took, took, s.image->size_bytes)
                         : fmt::format("Container image \"{}\" already present on machine", image));
  c->pull_backoff = absl::ZeroDuration();
  c->image_id = s.image->id.empty() ? s.image->ref.String() : s.image->id;
  if (!s.config.ok()) {
    // As the kubelet: the container is not made; the pod is looked at again after a while.
    c->waiting_reason = "CreateContainerConfigError";
    c->waiting_message = std::string(s.config.message());
    c->next_start = now + options_.backoff.initial;
    events_->Record(*run->pod, "Warning", "Failed", "Error: " + c->waiting_message);
    Log().info("pod {}/{}: container {}: {}", run->ns, run->name, c->name, c->waiting_message);
    return;
  }
  c->restart_count = s.instance;
  c->container_id = fmt::format("mkube://{}/{}/{}", run->uid, c->name, c->restart_count);
  c->env = s.process.env;
  c->dir = s.process.dir;
  c->isolated = s.process.sandbox.isolated;
  c->identity = s.process.sandbox.identity;
  c->cgroups = s.process.sandbox.cgroups;
  c->started_at = now;
  if (!s.record.ok()) {
    api::ContainerStateTerminated t = Terminated(*c, 128, "StartError", now, now);
    t.set_message(std::string(s.record.status().message()));
    c->RecordEnd(std::move(t));
    Log().info("pod {}/{}: container {} failed to start: {}", run->ns, run->name, c->name,
               s.record.status().ToString());
    events_->Record(*run->pod, "Warning", "Failed",
                    "Error: " + std::string(s.record.status().message()));
    PlanRestart(run, c, now);
    return;
  }
  c->pid = s.record->pid;
  c->monitor = s.record->monitor;
  c->adopted = false;
  c->kill_at = absl::InfiniteFuture();
  ProbeManager::StartProbing(c, s.spec, now);
  events_->Record(*run->pod, "Normal", "Created", "Created container " + c->name);
  events_->Record(*run->pod, "Normal", "Started", "Started container " + c->name);
  c->waiting_reason.clear();
  c->waiting_message.clear();
  Log().info("pod {}/{}: container {} started (pid {})", run->ns, run->name, c->name, c->pid);
}

}  // namespace mkube::agent::pods
