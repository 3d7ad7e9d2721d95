#include "agent/pod_manager.h"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "agent/container_spec.h"
#include "agent/process.h"
#include "agent/prober.h"
#include "api/printers.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace mkube::agent {
namespace fs = std::filesystem;

namespace {

bool Terminal(const api::Pod& pod) {
  return pod.status().phase() == "Succeeded" || pod.status().phase() == "Failed";
}

}  // namespace

PodManager::PodManager(client::ApiClient* client, client::Informer<api::Pod>* pods,
                       ImageStore* images, client::EventRecorder* events,
                       PodManagerOptions options)
    : client_(client), pods_(pods), images_(images), events_(events), options_(std::move(options)) {
  // a.b.c.d/len: hosts from .2 (the first is kept for the network) to the last but one.
  std::vector<std::string> parts = absl::StrSplit(options_.pod_cidr, '/');
  in_addr addr{};
  int len = 0;
  if (parts.size() == 2 && inet_pton(AF_INET, parts[0].c_str(), &addr) == 1 &&
      absl::SimpleAtoi(parts[1], &len) && len >= 8 && len <= 30) {
    ip_count_ = (1u << (32 - len)) - 3;
    ip_base_ = (ntohl(addr.s_addr) & ~((1u << (32 - len)) - 1)) + 2;
  }
}

PodManager::~PodManager() { Stop(); }

void PodManager::Start() {
  thread_ = std::thread([this] { Loop(); });
  prober_ = std::thread([this] { ProbeLoop(); });
}

void PodManager::Notify() {
  absl::MutexLock lock(&mu_);
  poke_ = true;
}

void PodManager::Stop(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (prober_.joinable()) prober_.join();
  absl::MutexLock lock(&mu_);
  for (auto& [uid, run] : runs_) {
    for (auto& c : run.containers) SignalGroup(c.pid, SIGTERM);
  }
  const absl::Time deadline = absl::Now() + grace;
  for (;;) {
    bool any = false;
    for (auto& [uid, run] : runs_) {
      for (auto& c : run.containers) {
        if (c.Running() && Ended(&c)) {
          SignalGroup(c.pid, SIGKILL);
          c.pid = 0;
        }
        any |= c.Running();
      }
    }
    ReapMonitors();
    if (!any) break;
    if (absl::Now() >= deadline) {
      for (auto& [uid, run] : runs_) {
        for (auto& c : run.containers) SignalGroup(c.pid, SIGKILL);
      }
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

void PodManager::Loop() {
  const auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || poke_; };
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&woken), options_.tick);
      if (stopping_) return;
      poke_ = false;
    }
    Round();
  }
}

void PodManager::Round() {
  const absl::Time now = options_.now();
  std::vector<Action> actions;
  {
    absl::MutexLock lock(&mu_);
    std::set<std::string> seen;
    for (const auto& pod : pods_->List()) {
      if (pod->spec().node_name() != options_.node_name) continue;
      const std::string& uid = pod->metadata().uid();
      seen.insert(uid);
      auto it = runs_.find(uid);
      PodRun* run = it == runs_.end() ? nullptr : &it->second;
      if (!run) {
        // Deleted before this node ran anything of it: it just goes.
        if (!pod->metadata().deletion_timestamp().empty()) {
          actions.push_back({Action::kDelete, pod, {}});
          continue;
        }
        run = Adopt(pod, now);
      }
      run->pod = pod;
      if (!pod->metadata().deletion_timestamp().empty() && !run->terminating) {
        BeginTerminating(run, pod->metadata().deletion_grace_period_seconds(), now);
      }
    }
    std::vector<std::string> finished;
    for (auto& [uid, run] : runs_) {
      if (!seen.contains(uid) && !run.gone) {
        run.gone = true;  // deleted outright (grace 0, or --force): stop what runs
        if (!run.terminating) {
          BeginTerminating(&run, run.pod->spec().termination_grace_period_seconds(), now);
        }
      }
      Step(&run, now);
      if (run.terminating && !run.AnyRunning()) {
        if (!run.gone) actions.push_back({Action::kDelete, run.pod, {}});
        finished.push_back(uid);
        continue;
      }
      if (run.gone) continue;
      api::PodStatus status = BuildStatus(run, options_.node_ip, now);
      if (run.fresh) {
        run.fresh = false;
        poke_ = true;  // start its containers in the next round, right away
      }
      std::string bytes = status.SerializeAsString();
      if (bytes != run.posted_status) {
        run.posted_status = std::move(bytes);
        actions.push_back({Action::kPostStatus, run.pod, std::move(status)});
      }
    }
    for (const auto& uid : finished) Finish(&runs_.at(uid));
    ReapMonitors();
    // Only against a complete list: an unsynced one would make every pod look deleted.
    if (!swept_ && pods_->WaitForCacheSync(std::chrono::milliseconds(0))) {
      SweepLeftovers(seen);
      swept_ = true;
    }
  }
  for (const auto& a : actions) Do(a);
}

void PodManager::Do(const Action& a) {
  const auto& meta = a.pod->metadata();
  if (a.kind == Action::kDelete) {
    apiserver::DeleteRequest req;
    req.set_resource("pods");
    req.set_namespace_(meta.namespace_());
    req.set_name(meta.name());
    req.set_grace_period_seconds(0);
    req.mutable_preconditions()->set_uid(meta.uid());
    auto r = client_->Delete(req);
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound &&
        r.status().code() != absl::StatusCode::kAborted) {
      spdlog::warn("pod {}/{}: delete failed: {}", meta.namespace_(), meta.name(), r.status().ToString());
    }
    return;
  }
  api::Pod pod;
  *pod.mutable_metadata() = meta;
  pod.mutable_metadata()->clear_resource_version();  // the node owns the status: last write wins
  *pod.mutable_status() = a.status;
  auto r = client_->Update<api::Pod>("pods", meta.namespace_(), pod, "status");
  if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) {
    spdlog::warn("pod {}/{}: status update failed: {}", meta.namespace_(), meta.name(),
                 r.status().ToString());
    absl::MutexLock lock(&mu_);
    if (auto it = runs_.find(meta.uid()); it != runs_.end()) it->second.posted_status.clear();
  }
}

PodRun* PodManager::Adopt(const std::shared_ptr<const api::Pod>& pod, absl::Time now) {
  const auto& meta = pod->metadata();
  PodRun& run = runs_[meta.uid()];
  run.uid = meta.uid();
  run.ns = meta.namespace_();
  run.name = meta.name();
  run.pod = pod;
  run.sandbox = (fs::path(options_.root_dir) / "pods" / meta.uid()).string();
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
    } else if (auto rec = ReadRecord(c.RecordPath(c.restart_count));
               rec.ok() && (Alive(*rec) || ReadExitRecord(c.ExitPath(c.restart_count)))) {
      // Started by this node before the agent restarted: still running (or ended while the
      // agent was away, which the next round reports).
      c.pid = rec->pid;
      c.monitor = rec->monitor;
      c.adopted = true;
      c.started_at = absl::FromUnixSeconds(rec->started_unix);
      c.env = rec->env;
      c.dir = rec->dir;
      // Probed again at once: it has been running all along (so it has started).
      c.startup.ok = c.liveness.ok = true;
      c.startup.next = c.liveness.next = c.readiness.next = now;
      spdlog::info("pod {}/{}: container {} adopted (pid {})", run.ns, run.name, c.name, c.pid);
    }
    run.containers.push_back(std::move(c));
  }
  spdlog::info("pod {}/{}: adopted (uid {}, ip {})", run.ns, run.name, run.uid, run.ip);
  return &run;
}

void PodManager::BeginTerminating(PodRun* run, int64_t grace_seconds, absl::Time now) {
  run->terminating = true;
  run->kill_at = now + absl::Seconds(std::max<int64_t>(0, grace_seconds));
  for (auto& c : run->containers) {
    if (!c.Running()) continue;
    SignalGroup(c.pid, grace_seconds > 0 ? SIGTERM : SIGKILL);
    if (!run->gone) events_->Record(*run->pod, "Normal", "Killing", "Stopping container " + c.name);
  }
  spdlog::info("pod {}/{}: stopping (grace {}s)", run->ns, run->name, grace_seconds);
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
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::Milliseconds(100))) return;
      const absl::Time now = options_.now();
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
            Due d{uid, c.name, kind, c.pid, probe, *spec, {run.ip, c.env, c.dir, nullptr}};
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
      ApplyProbe(c, &it->second, d.kind, d.probe, result, options_.now());
    }
    if (!due.empty()) Notify();
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
  SignalGroup(c->pid, grace > 0 ? SIGTERM : SIGKILL);
  c->kill_at = now + absl::Seconds(std::max<int64_t>(0, grace));
}

std::optional<ExitInfo> PodManager::Ended(ContainerRun* c) {
  if (auto exit = ReadExitRecord(c->ExitPath(c->restart_count))) {
    if (!c->adopted) monitors_.push_back(c->monitor);  // it exits right after writing
    return exit;
  }
  // No record: the monitor still waits for it, unless the monitor itself was killed (and the
  // container with it).
  bool monitor_gone;
  if (c->adopted) {
    monitor_gone = kill(c->monitor, 0) != 0 && errno == ESRCH;
  } else {
    monitor_gone = ReapMonitor(c->monitor);
  }
  if (!monitor_gone) return std::nullopt;
  if (auto exit = ReadExitRecord(c->ExitPath(c->restart_count))) return exit;
  spdlog::warn("container {}: its monitor (pid {}) is gone without an exit record", c->name,
               c->monitor);
  return ExitInfo{.exit_code = 128 + SIGKILL, .signal = SIGKILL};
}

void PodManager::ReapMonitors() {
  std::erase_if(monitors_, ReapMonitor);
}

void PodManager::Step(PodRun* run, absl::Time now) {
  for (auto& c : run->containers) {
    if (c.Running()) {
      if (auto exit = Ended(&c)) {
        SignalGroup(c.pid, SIGKILL);  // the container ends with its first process
        api::ContainerStateTerminated t;
        t.set_exit_code(exit->exit_code);
        t.set_signal(exit->signal);
        t.set_reason(exit->exit_code == 0 ? "Completed" : "Error");
        t.set_started_at(Rfc3339(c.started_at));
        t.set_finished_at(Rfc3339(now));
        t.set_container_id(c.container_id);
        c.Ended(std::move(t));
        c.pid = 0;
        spdlog::info("pod {}/{}: container {} exited with {}", run->ns, run->name, c.name,
                     exit->exit_code);
        AfterExit(run, &c, now);
      } else if ((run->terminating && now >= run->kill_at) || now >= c.kill_at) {
        SignalGroup(c.pid, SIGKILL);
      }
    }
    if (run->terminating) {
      if (!c.Running()) c.done = true;
      continue;
    }
    if (!run->fresh && !c.Running() && !c.done && now >= c.next_start) StartContainer(run, &c, now);
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

std::optional<Image> PodManager::PullImage(PodRun* run, ContainerRun* c, const api::Container& spec,
                                          absl::Time now) {
  const std::string& policy = spec.image_pull_policy();
  const bool present = images_->Present(spec.image());
  if (policy == "Never" && !present) {
    c->waiting_reason = "ErrImageNeverPull";
    c->waiting_message = fmt::format(
        "Container image \"{}\" is not present with pull policy of Never", spec.image());
    c->next_start = now + options_.backoff.initial;
    events_->Record(*run->pod, "Warning", "ErrImageNeverPull", c->waiting_message);
    return std::nullopt;
  }
  const bool pull = policy == "Always" || !present;
  if (pull) events_->Record(*run->pod, "Normal", "Pulling", fmt::format("Pulling image \"{}\"", spec.image()));
  const absl::Time began = absl::Now();
  auto image = images_->Pull(spec.image(), policy == "Always");
  if (!image.ok()) {
    c->pull_backoff = c->pull_backoff == absl::ZeroDuration()
                          ? options_.backoff.initial
                          : std::min(c->pull_backoff * 2, options_.backoff.max);
    c->waiting_reason = "ErrImagePull";
    c->waiting_message = fmt::format("Failed to pull image \"{}\": {}", spec.image(),
                                     std::string(image.status().message()));
    c->pull_failed_at = now;
    c->next_start = now + c->pull_backoff;
    events_->Record(*run->pod, "Warning", "Failed", c->waiting_message);
    events_->Record(*run->pod, "Warning", "Failed", "Error: ErrImagePull");
    spdlog::info("pod {}/{}: {}", run->ns, run->name, c->waiting_message);
    return std::nullopt;
  }
  events_->Record(*run->pod, "Normal", "Pulled",
                  pull ? fmt::format("Successfully pulled image \"{}\" in {}", spec.image(),
                                     absl::FormatDuration(absl::Trunc(absl::Now() - began, absl::Milliseconds(1))))
                       : fmt::format("Container image \"{}\" already present on machine", spec.image()));
  c->pull_backoff = absl::ZeroDuration();
  c->image_id = image->ref.String();
  return std::move(*image);
}

void PodManager::StartContainer(PodRun* run, ContainerRun* c, absl::Time now) {
  const api::Container* spec = run->Spec(c->name);
  if (!spec) return;
  std::optional<Image> image = PullImage(run, c, *spec, now);
  if (!image) return;

  const std::vector<std::string> argv = ContainerArgv(*spec, *image);
  const std::vector<std::string> env = ContainerEnv(*spec, *image, run->name, run->ip);
  const std::string dir = ContainerDir(*spec, (fs::path(run->sandbox) / "root").string());
  std::error_code ec;
  fs::create_directories(dir, ec);

  if (c->last) ++c->restart_count;
  c->container_id = fmt::format("mkube://{}/{}/{}", run->uid, c->name, c->restart_count);
  c->env = env;
  c->dir = dir;
  auto pid = StartMonitored(options_.monitor_path, {argv, env, dir, c->LogPath(c->restart_count)},
                            c->RecordPath(c->restart_count), c->ExitPath(c->restart_count));
  c->started_at = now;
  if (!pid.ok()) {
    api::ContainerStateTerminated t;
    t.set_exit_code(128);
    t.set_reason("StartError");
    t.set_message(std::string(pid.status().message()));
    t.set_started_at(Rfc3339(now));
    t.set_finished_at(Rfc3339(now));
    t.set_container_id(c->container_id);
    c->Ended(std::move(t));
    spdlog::info("pod {}/{}: container {} failed to start: {}", run->ns, run->name, c->name,
                 pid.status().ToString());
    events_->Record(*run->pod, "Warning", "Failed", "Error: " + std::string(pid.status().message()));
    AfterExit(run, c, now);
    return;
  }
  c->pid = pid->pid;
  c->monitor = pid->monitor;
  c->adopted = false;
  c->kill_at = absl::InfiniteFuture();
  auto arm = [&](ProbeState* st, const api::Probe* probe, bool ok) {
    *st = ProbeState();
    st->ok = ok;
    if (probe) st->next = now + TimingOf(*probe).initial_delay;
  };
  arm(&c->startup, spec->has_startup_probe() ? &spec->startup_probe() : nullptr, false);
  arm(&c->liveness, spec->has_liveness_probe() ? &spec->liveness_probe() : nullptr, true);
  arm(&c->readiness, spec->has_readiness_probe() ? &spec->readiness_probe() : nullptr, false);
  events_->Record(*run->pod, "Normal", "Created", "Created container " + c->name);
  events_->Record(*run->pod, "Normal", "Started", "Started container " + c->name);
  c->waiting_reason.clear();
  c->waiting_message.clear();
  spdlog::info("pod {}/{}: container {} started (pid {})", run->ns, run->name, c->name, c->pid);
}

void PodManager::Finish(PodRun* run) {
  spdlog::info("pod {}/{}: stopped and removed", run->ns, run->name);
  if (!run->ip.empty() && run->ip != options_.node_ip) {
    in_addr addr{};
    if (inet_pton(AF_INET, run->ip.c_str(), &addr) == 1) ips_in_use_.erase(ntohl(addr.s_addr));
  }
  std::error_code ec;
  fs::remove_all(run->sandbox, ec);
  runs_.erase(run->uid);
}

void PodManager::SweepLeftovers(const std::set<std::string>& live) {
  std::error_code ec;
  const fs::path pods = fs::path(options_.root_dir) / "pods";
  for (const auto& entry : fs::directory_iterator(pods, ec)) {
    const std::string uid = entry.path().filename().string();
    if (live.contains(uid) || runs_.contains(uid)) continue;
    // A pod deleted while the agent was away: stop what it left running, drop its folder.
    for (auto it = fs::recursive_directory_iterator(entry.path() / "logs", ec);
         !ec && it != fs::end(it); it.increment(ec)) {
      if (it->path().extension() != ".pid") continue;
      if (auto rec = ReadRecord(it->path().string()); rec.ok() && Alive(*rec)) {
        spdlog::info("pod {}: stopping process {} left from before a restart", uid, rec->pid);
        SignalGroup(rec->pid, SIGKILL);
      }
    }
    fs::remove_all(entry.path(), ec);
  }
}

std::string PodManager::AllocateIp(const std::string& wanted) {
  in_addr want{};
  if (!wanted.empty() && inet_pton(AF_INET, wanted.c_str(), &want) == 1) {
    const uint32_t ip = ntohl(want.s_addr);
    if (ip >= ip_base_ && ip < ip_base_ + ip_count_ && ips_in_use_.insert(ip).second) return wanted;
  }
  for (uint32_t i = 0; i < ip_count_; ++i) {
    const uint32_t ip = ip_base_ + i;
    if (ips_in_use_.insert(ip).second) {
      in_addr addr{htonl(ip)};
      char buf[INET_ADDRSTRLEN];
      return inet_ntop(AF_INET, &addr, buf, sizeof buf);
    }
  }
  return options_.node_ip;  // out of pod addresses: share the node's
}

absl::StatusOr<std::pair<PodRun*, ContainerRun*>> PodManager::FindContainer(
    const std::string& ns, const std::string& pod, const std::string& uid,
    const std::string& container) {
  for (auto& [id, run] : runs_) {
    if (run.ns != ns || run.name != pod || (!uid.empty() && uid != id)) continue;
    // No name: the pod's only container.
    ContainerRun* c = run.Find(container.empty() && run.containers.size() == 1
                                   ? run.containers[0].name
                                   : container);
    return std::make_pair(&run, c);
  }
  return absl::NotFoundError(fmt::format("pod \"{}\" in namespace \"{}\" is not running on node {}",
                                         pod, ns, options_.node_name));
}

absl::StatusOr<LogTarget> PodManager::Logs(const std::string& ns, const std::string& pod,
                                           const std::string& uid, const std::string& container,
                                           bool previous) {
  absl::MutexLock lock(&mu_);
  auto found = FindContainer(ns, pod, uid, container);
  if (!found.ok()) return found.status();
  const auto [run, c] = *found;
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
    return absl::FailedPreconditionError(fmt::format(
        "container \"{}\" in pod \"{}\" is waiting to start: {}", container, pod,
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

absl::StatusOr<ExecTarget> PodManager::Exec(const std::string& ns, const std::string& pod,
                                            const std::string& uid, const std::string& container) {
  absl::MutexLock lock(&mu_);
  auto found = FindContainer(ns, pod, uid, container);
  if (!found.ok()) return found.status();
  const ContainerRun* c = found->second;
  if (!c || !c->Running()) {
    return absl::FailedPreconditionError(fmt::format("container not found (\"{}\")", container));
  }
  return ExecTarget{c->env, c->dir};
}

}  // namespace mkube::agent
