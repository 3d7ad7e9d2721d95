#include "agent/pods/pod_workers.h"

#include <signal.h>

#include <filesystem>
#include <set>
#include <system_error>

#include "api/object.h"
#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace mkube::agent::pods {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& log = log::Logger("pods");
  return log;
}

}  // namespace
namespace fs = std::filesystem;

PodWorkers::PodWorkers(client::ApiClient* client, client::Informer<api::Pod>* pods,
                       runtime::ContainerRuntime* runtime, PodNetwork* network,
                       client::EventRecorder* events, PodWorkersOptions options)
    : client_(client),
      pods_(pods),
      runtime_(runtime),
      network_(network),
      events_(events),
      options_(std::move(options)),
      clock_(options_.clock),
      queue_(clock_),
      probes_(this, runtime, events, clock_) {}

PodWorkers::~PodWorkers() { Stop(); }

client::Informer<api::Pod>::Handlers PodWorkers::Handlers() {
  return {[this](const auto& pod) { Enqueue(*pod); },
          [this](const auto&, const auto& pod) { Enqueue(*pod); },
          [this](const auto& pod) { Enqueue(*pod); }};
}

void PodWorkers::Enqueue(const api::Pod& pod) { queue_.Add(client::KeyOf(pod)); }

void PodWorkers::Start() {
  for (const auto& pod : pods_->List()) Enqueue(*pod);
  worker_ = std::thread([this] { SyncLoop(); });
  probes_.Start();
}

void PodWorkers::SyncLoop() {
  while (auto key = queue_.Get()) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    SweepLeftoversOnce();
    Sync(*key);
    queue_.Done(*key);
  }
}

void PodWorkers::SweepLeftoversOnce() {
  // Only against a complete list: an unsynced cache would make every pod look deleted.
  if (swept_ || !pods_->HasSynced()) return;
  SweepLeftovers();
  swept_ = true;
}

int PodWorkers::SyncReady() {
  SweepLeftoversOnce();
  int n = 0;
  while (queue_.Len() > 0) {
    auto key = queue_.Get();
    if (!key) break;
    Sync(*key);
    queue_.Done(*key);
    ++n;
  }
  return n;
}

void PodWorkers::Stop(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  queue_.ShutDown();
  if (worker_.joinable()) worker_.join();
  probes_.Stop();
  {
    absl::MutexLock lock(&mu_);
    for (auto& [uid, run] : runs_) {
      for (auto& c : run.containers) {
        if (c.Running()) runtime_->Signal(c.pid, SIGTERM);
      }
    }
  }
  // The agent is going away: this waits in real time, whatever clock its pods run on.
  const absl::Time deadline = absl::Now() + grace;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (!AnyStillRunning(deadline)) {
        // The holders of shared PID namespaces go with the containers.
        runtime_->KillPauseProcesses();
        runtime_->ReapMonitors();
        return;
      }
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

bool PodWorkers::AnyStillRunning(absl::Time deadline) {
  bool any = false;
  for (auto& [uid, run] : runs_) {
    for (auto& c : run.containers) {
      if (c.Running() && ExitOf(c)) {
        runtime_->Signal(c.pid, SIGKILL);
        c.pid = 0;
      }
      any |= c.Running();
    }
  }
  if (!any) return false;
  runtime_->ReapMonitors();
  if (absl::Now() >= deadline) {
    for (auto& [uid, run] : runs_) {
      for (auto& c : run.containers) {
        if (c.Running()) runtime_->Signal(c.pid, SIGKILL);
      }
    }
  }
  return true;
}

void PodWorkers::Sync(const std::string& key) {
  const std::shared_ptr<const api::Pod> pod = pods_->Get(key);
  const absl::Time now = clock_->Now();
  SyncWork work;
  {
    absl::MutexLock lock(&mu_);
    Plan(key, pod, now, &work);
  }
  if (!work.starts.empty() && runtime_->isolation().mount_ns &&
      work.starts[0].pod->spec().share_process_namespace()) {
    const runtime::ContainerStart& first = work.starts[0];
    const pid_t pause = runtime_->EnsurePauseProcess(first.uid, first.pod_dir, *first.pod);
    for (auto& start : work.starts) start.pause_pid = pause;
  }
  for (auto& start : work.starts) runtime_->StartContainer(&start);
  // What the starts took (pulls can be long) is not taken from the pod's deadlines.
  const absl::Time after = work.starts.empty() ? now : clock_->Now();
  {
    absl::MutexLock lock(&mu_);
    for (auto& start : work.starts) RecordStart(start, after);
    ReportAndRetire(key, after, &work);
  }
  for (const auto& [uid, dir] : work.removed) runtime_->RemovePodFiles(uid, dir);
  bool done = true;
  for (const auto& update : work.updates) done &= PostStatusOrDelete(update);
  if (done) {
    queue_.Forget(key);
  } else {
    queue_.AddRateLimited(key);
  }
  if (work.wake != absl::InfiniteFuture()) queue_.AddAfter(key, work.wake - clock_->Now());
}

void PodWorkers::ReportAndRetire(const std::string& key, absl::Time now, SyncWork* work) {
  for (auto it = runs_.begin(); it != runs_.end();) {
    PodRun& run = it->second;
    if (run.ns + "/" + run.name != key) {
      ++it;
      continue;
    }
    if (run.terminating && !run.AnyRunning()) {
      if (!run.gone) work->updates.push_back({ApiUpdate::kDelete, run.pod, {}});
      Log().info("pod {}/{}: stopped and removed", run.ns, run.name);
      work->removed.emplace_back(run.uid, run.pod_dir);
      runtime_->RemovePod(run.uid);
      network_->ReleaseIp(run.ip);
      network_->CloseHostPorts(run.uid);
      it = runs_.erase(it);
      continue;
    }
    if (!run.gone) {
      api::PodStatus status = BuildStatus(run, options_.node_ip, now);
      // An ended pod holds no port (the scheduler may place another pod asking for it).
      if (status.phase() == "Succeeded" || status.phase() == "Failed") {
        network_->CloseHostPorts(run.uid);
      }
      if (!run.posted_status || !api::Equal(*run.posted_status, status)) {
        run.posted_status = status;
        work->updates.push_back({ApiUpdate::kPostStatus, run.pod, std::move(status)});
      }
    }
    if (run.fresh) {
      run.fresh = false;
      work->wake = now;  // its containers start in the next sync, right away
    }
    work->wake = std::min(work->wake, NextLook(run, now));
    ++it;
  }
}

absl::Time PodWorkers::NextLook(const PodRun& run, absl::Time now) const {
  absl::Time wake = absl::InfiniteFuture();
  for (const auto& c : run.containers) {
    absl::Time next = absl::InfiniteFuture();
    if (c.Running()) {
      next = std::min({now + options_.resync, c.kill_at,
                       run.terminating ? run.kill_at : absl::InfiniteFuture()});
    } else if (!c.done && !run.terminating) {
      next = std::max(c.next_start, now + options_.resync);
      if (c.waiting_reason == "ErrImagePull") {
        next = std::min(next, c.pull_failed_at + absl::Seconds(1));
      }
    }
    // A deadline already passed (a SIGKILL sent, its exit not yet recorded): look again at
    // the next resync rather than at once, over and over.
    if (next <= now) next = now + options_.resync;
    wake = std::min(wake, next);
  }
  return wake;
}

bool PodWorkers::PostStatusOrDelete(const ApiUpdate& update) {
  const auto& meta = update.pod->metadata();
  if (update.kind == ApiUpdate::kDelete) {
    absl::Status st = FinalDelete(client_, meta);
    if (!st.ok()) {
      Log().warn("pod {}/{}: delete failed: {}", meta.namespace_(), meta.name(), st.ToString());
    }
    return st.ok();
  }
  api::Pod pod;
  *pod.mutable_metadata() = meta;
  pod.mutable_metadata()->clear_resource_version();  // the node owns the status: last write wins
  *pod.mutable_status() = update.status;
  auto r = client_->Update<api::Pod>("pods", meta.namespace_(), pod, "status");
  if (r.ok() || r.status().code() == absl::StatusCode::kNotFound) return true;
  Log().warn("pod {}/{}: status update failed: {}", meta.namespace_(), meta.name(),
             r.status().ToString());
  absl::MutexLock lock(&mu_);
  if (auto it = runs_.find(meta.uid()); it != runs_.end()) it->second.posted_status.reset();
  return false;
}

void PodWorkers::SweepLeftovers() {
  std::set<std::string> live;
  for (const auto& pod : pods_->List()) {
    if (pod->spec().node_name() == options_.node_name) live.insert(pod->metadata().uid());
  }
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [uid, run] : runs_) live.insert(uid);
  }
  std::error_code ec;
  const fs::path pods = fs::path(options_.root_dir) / "pods";
  Log().info("looking for what pods deleted while the agent was away left behind");
  for (const auto& entry : fs::directory_iterator(pods, ec)) {
    const std::string uid = entry.path().filename().string();
    if (live.contains(uid)) continue;
    // A pod deleted while the agent was away: stop what it left running, drop its folder.
    runtime_->KillLeftovers(uid, entry.path().string());
    fs::remove_all(entry.path(), ec);
  }
}

std::string PodWorkers::PodDir(const std::string& uid) const {
  return (fs::path(options_.root_dir) / "pods" / uid).string();
}

absl::StatusOr<std::pair<PodRun*, ContainerRun*>> PodWorkers::FindContainer(
    const std::string& ns, const std::string& pod, const std::string& uid,
    const std::string& container) {
  for (auto& [id, run] : runs_) {
    if (run.ns != ns || run.name != pod || (!uid.empty() && uid != id)) continue;
    // No name: the pod's only container.
    ContainerRun* c = run.Find(
        container.empty() && run.containers.size() == 1 ? run.containers[0].name : container);
    return std::make_pair(&run, c);
  }
  return absl::NotFoundError(fmt::format("pod \"{}\" in namespace \"{}\" is not running on node {}",
                                         pod, ns, options_.node_name));
}

absl::StatusOr<LogTarget> PodWorkers::Logs(const std::string& ns, const std::string& pod,
                                           const std::string& uid, const std::string& container,
                                           bool previous) {
  absl::MutexLock lock(&mu_);
  MKUBE_ASSIGN_OR_RETURN(auto found, FindContainer(ns, pod, uid, container));
  const auto [run, c] = found;
  if (!c) {
    return absl::FailedPreconditionError(
        fmt::format("container {} is not valid for pod {}", container, pod));
  }
  // Instance n logs to n.log; the newest is restart_count.
  if (previous) {
    if (c->restart_count < 1) {
      return absl::FailedPreconditionError(fmt::format(
          "previous terminated container \"{}\" in pod \"{}\" not found", container, pod));
    }
    return LogTarget{c->LogPath(c->restart_count - 1), [] { return false; }};
  }
  if (!c->Running() && !c->last) {
    return absl::FailedPreconditionError(
        fmt::format("container \"{}\" in pod \"{}\" is waiting to start: {}", container, pod,
                    c->waiting_reason.empty() ? "ContainerCreating" : c->waiting_reason));
  }
  const std::string uid_copy = run->uid, name = c->name;
  const pid_t pid = c->pid;
  const int instance = c->restart_count;
  return LogTarget{c->LogPath(instance), [this, uid_copy, name, pid]() ABSL_LOCKS_EXCLUDED(mu_) {
                     absl::MutexLock lock(&mu_);
                     auto it = runs_.find(uid_copy);
                     if (it == runs_.end()) return false;
                     const ContainerRun* now = it->second.Find(name);
                     return now && pid > 0 && now->pid == pid;
                   }};
}

absl::StatusOr<runtime::ExecTarget> PodWorkers::Exec(const std::string& ns, const std::string& pod,
                                                     const std::string& uid,
                                                     const std::string& container) {
  absl::MutexLock lock(&mu_);
  MKUBE_ASSIGN_OR_RETURN(auto found, FindContainer(ns, pod, uid, container));
  const ContainerRun* c = found.second;
  if (!c || !c->Running()) {
    return absl::FailedPreconditionError(fmt::format("container not found (\"{}\")", container));
  }
  return runtime::ExecTarget{c->env, c->dir, c->pid, c->isolated, c->identity, c->cgroups};
}

absl::StatusOr<std::string> PodWorkers::PodIp(const std::string& ns, const std::string& pod,
                                              const std::string& uid) {
  absl::MutexLock lock(&mu_);
  MKUBE_ASSIGN_OR_RETURN(auto found, FindContainer(ns, pod, uid, ""));
  const PodRun* run = found.first;
  if (run->ip.empty() || !run->AnyRunning()) {
    return absl::FailedPreconditionError("unable to forward port because pod is not running");
  }
  return run->ip;
}

std::vector<node::RunningContainer> PodWorkers::RunningContainers() {
  std::vector<node::RunningContainer> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [uid, run] : runs_) {
    for (const auto& c : run.containers) {
      if (c.Running()) out.push_back({run.ns, run.name, uid, c.name, c.pid});
    }
  }
  return out;
}

std::vector<std::string> PodWorkers::ImagesInUse() {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [uid, run] : runs_) {
    if (run.pod) {
      for (const auto& c : run.pod->spec().init_containers()) out.push_back(c.image());
      for (const auto& c : run.pod->spec().containers()) out.push_back(c.image());
    }
    // What each container was started from, whatever its name stands for now.
    for (const auto& c : run.containers) {
      if (!c.image_id.empty()) out.push_back(c.image_id);
    }
  }
  return out;
}

std::vector<DueProbe> PodWorkers::DueProbes() {
  std::vector<DueProbe> due;
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  for (const auto& [uid, run] : runs_) {
    if (run.terminating || run.gone) continue;
    ProbeManager::CollectDue(run, now, &due);
  }
  return due;
}

std::optional<std::string> PodWorkers::RecordProbeResult(const DueProbe& probe,
                                                         const absl::Status& result) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(probe.uid);
  if (it == runs_.end()) return std::nullopt;
  ContainerRun* c = it->second.Find(probe.container);
  if (!c || c->pid != probe.pid) return std::nullopt;  // that instance is gone: its result is moot
  probes_.RecordResult(c, &it->second, probe.kind, probe.probe, result, clock_->Now());
  return it->second.ns + "/" + it->second.name;
}

void PodWorkers::Resync(const std::string& pod_key) { queue_.Add(pod_key); }

}  // namespace mkube::agent::pods
