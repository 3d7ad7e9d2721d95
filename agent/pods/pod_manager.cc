#include "agent/pods/pod_manager.h"

#include <arpa/inet.h>
#include <signal.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "api/log.h"
#include "api/object.h"
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

PodManager::PodManager(client::ApiClient* client, client::Informer<api::Pod>* pods,
                       runtime::ImageStore* images, client::EventRecorder* events,
                       runtime::ProcessRunner* runner, PodManagerOptions options)
    : client_(client),
      pods_(pods),
      images_(images),
      events_(events),
      runner_(runner),
      options_(std::move(options)),
      clock_(options_.clock),
      queue_(clock_) {
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

client::Informer<api::Pod>::Handlers PodManager::Handlers() {
  return {[this](const auto& pod) { Enqueue(*pod); },
          [this](const auto&, const auto& pod) { Enqueue(*pod); },
          [this](const auto& pod) { Enqueue(*pod); }};
}

void PodManager::Enqueue(const api::Pod& pod) { queue_.Add(client::KeyOf(pod)); }

void PodManager::Start() {
  for (const auto& pod : pods_->List()) Enqueue(*pod);
  worker_ = std::thread([this] { Worker(); });
  prober_ = std::thread([this] { ProbeLoop(); });
}

void PodManager::Worker() {
  while (auto key = queue_.Get()) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    MaybeSweep();
    Sync(*key);
    queue_.Done(*key);
  }
}

void PodManager::MaybeSweep() {
  // Only against a complete list: an unsynced cache would make every pod look deleted.
  if (swept_ || !pods_->HasSynced()) return;
  SweepLeftovers();
  swept_ = true;
}

int PodManager::SyncReady() {
  MaybeSweep();
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

void PodManager::Stop(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  queue_.ShutDown();
  if (worker_.joinable()) worker_.join();
  if (prober_.joinable()) prober_.join();
  {
    absl::MutexLock lock(&mu_);
    for (auto& [uid, run] : runs_) {
      for (auto& c : run.containers) {
        if (c.Running()) runner_->Signal(c.pid, SIGTERM);
      }
    }
  }
  // The agent is going away: this waits in real time, whatever clock its pods run on.
  const absl::Time deadline = absl::Now() + grace;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      bool any = false;
      for (auto& [uid, run] : runs_) {
        for (auto& c : run.containers) {
          if (c.Running() && Ended(&c)) {
            runner_->Signal(c.pid, SIGKILL);
            c.pid = 0;
          }
          any |= c.Running();
        }
      }
      if (!any) {
        // The holders of shared PID namespaces go with the containers.
        for (auto& [uid, run] : runs_) {
          if (run.pause.pid <= 0) continue;
          runner_->Signal(run.pause.pid, SIGKILL);
          if (!run.pause_adopted) monitors_.push_back(run.pause.monitor);
          run.pause.pid = 0;
        }
        ReapMonitors();
        return;
      }
      ReapMonitors();
      if (absl::Now() >= deadline) {
        for (auto& [uid, run] : runs_) {
          for (auto& c : run.containers) {
            if (c.Running()) runner_->Signal(c.pid, SIGKILL);
          }
        }
      }
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

void PodManager::Sync(const std::string& key) {
  const std::shared_ptr<const api::Pod> pod = pods_->Get(key);
  const absl::Time now = clock_->Now();
  Work work;
  {
    absl::MutexLock lock(&mu_);
    Plan(key, pod, now, &work);
  }
  if (!work.launches.empty() && options_.isolation.mount_ns &&
      work.launches[0].pod->spec().share_process_namespace()) {
    const pid_t pause =
        EnsurePause(work.launches[0].uid, work.launches[0].sandbox, *work.launches[0].pod);
    for (auto& launch : work.launches) launch.pause = pause;
  }
  for (auto& launch : work.launches) Carry(&launch);
  // What the launches took (pulls can be long) is not taken from the pod's deadlines.
  const absl::Time after = work.launches.empty() ? now : clock_->Now();
  {
    absl::MutexLock lock(&mu_);
    for (auto& launch : work.launches) Launched(launch, after);
    Report(key, after, &work);
  }
  for (const auto& dir : work.removals) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  for (const auto& uid : work.removed_uids)
    runtime::RemovePodCgroups(options_.isolation.cgroups, uid);
  bool done = true;
  for (const auto& a : work.actions) done &= Do(a);
  if (done) {
    queue_.Forget(key);
  } else {
    queue_.AddRateLimited(key);
  }
  if (work.wake != absl::InfiniteFuture()) queue_.AddAfter(key, work.wake - clock_->Now());
}

void PodManager::Plan(const std::string& key, const std::shared_ptr<const api::Pod>& pod,
                      absl::Time now, Work* work) {
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
    const bool ran_here = it != runs_.end() || fs::exists(SandboxOf(pod->metadata().uid()));
    if (deleting && !ran_here) {
      // Deleted before this node ran anything of it: it just goes.
      work->actions.push_back({Action::kDelete, pod, {}});
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
  for (PodRun* run : runs) Step(run, now, work);
  ReapMonitors();
}

void PodManager::Report(const std::string& key, absl::Time now, Work* work) {
  for (auto it = runs_.begin(); it != runs_.end();) {
    PodRun& run = it->second;
    if (run.ns + "/" + run.name != key) {
      ++it;
      continue;
    }
    if (run.terminating && !run.AnyRunning()) {
      if (!run.gone) work->actions.push_back({Action::kDelete, run.pod, {}});
      Log().info("pod {}/{}: stopped and removed", run.ns, run.name);
      work->removals.push_back(run.sandbox);
      work->removed_uids.push_back(run.uid);
      if (run.pause.pid > 0) {
        runner_->Signal(run.pause.pid, SIGKILL);  // what is left in the pod's namespace with it
        if (!run.pause_adopted) monitors_.push_back(run.pause.monitor);
      }
      ReleaseIp(run.ip);
      CloseHostPorts(&run);
      it = runs_.erase(it);
      continue;
    }
    if (!run.gone) {
      api::PodStatus status = BuildStatus(run, options_.node_ip, now);
      // An ended pod holds no port (the scheduler may place another pod asking for it).
      if (status.phase() == "Succeeded" || status.phase() == "Failed") CloseHostPorts(&run);
      if (!run.posted_status || !api::Equal(*run.posted_status, status)) {
        run.posted_status = status;
        work->actions.push_back({Action::kPostStatus, run.pod, std::move(status)});
      }
    }
    if (run.fresh) {
      run.fresh = false;
      work->wake = now;  // its containers start in the next sync, right away
    }
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
      work->wake = std::min(work->wake, next);
    }
    ++it;
  }
}

bool PodManager::Do(const Action& a) {
  const auto& meta = a.pod->metadata();
  if (a.kind == Action::kDelete) {
    absl::Status st = FinalDelete(client_, meta);
    if (!st.ok()) {
      Log().warn("pod {}/{}: delete failed: {}", meta.namespace_(), meta.name(), st.ToString());
    }
    return st.ok();
  }
  api::Pod pod;
  *pod.mutable_metadata() = meta;
  pod.mutable_metadata()->clear_resource_version();  // the node owns the status: last write wins
  *pod.mutable_status() = a.status;
  auto r = client_->Update<api::Pod>("pods", meta.namespace_(), pod, "status");
  if (r.ok() || r.status().code() == absl::StatusCode::kNotFound) return true;
  Log().warn("pod {}/{}: status update failed: {}", meta.namespace_(), meta.name(),
             r.status().ToString());
  absl::MutexLock lock(&mu_);
  if (auto it = runs_.find(meta.uid()); it != runs_.end()) it->second.posted_status.reset();
  return false;
}

void PodManager::SweepLeftovers() {
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
    for (auto it = fs::recursive_directory_iterator(entry.path() / "logs", ec);
         !ec && it != fs::end(it); it.increment(ec)) {
      if (it->path().extension() != ".pid") continue;
      if (auto rec = runner_->ReadRecord(it->path().string()); rec.ok() && runner_->Alive(*rec)) {
        Log().info("pod {}: stopping process {} left from before a restart", uid, rec->pid);
        runner_->Signal(rec->pid, SIGKILL);
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

std::string PodManager::SandboxOf(const std::string& uid) const {
  return (fs::path(options_.root_dir) / "pods" / uid).string();
}

void PodManager::OpenHostPorts(PodRun* run) {
  // On the node's own network the pod's process holds the port itself.
  if (run->pod->spec().host_network() || run->ip == options_.node_ip) return;
  for (const auto& c : run->pod->spec().containers()) {
    for (const auto& p : c.ports()) {
      if (p.host_port() <= 0) continue;
      if (!p.protocol().empty() && p.protocol() != "TCP") {
        Log().warn("pod {}/{}: hostPort {}/{} is not forwarded (only TCP is)", run->ns, run->name,
                   p.host_port(), p.protocol());
        continue;
      }
      // Every address means the node's own: nothing listens beyond it unless asked.
      const std::string ip =
          p.host_ip().empty() || p.host_ip() == "0.0.0.0" ? options_.node_ip : p.host_ip();
      const std::string id = fmt::format("{}/{}:{}", run->uid, ip, p.host_port());
      const int target = p.container_port() > 0 ? p.container_port() : p.host_port();
      if (auto st = host_ports_.Open(id, ip, p.host_port(), run->ip, target); !st.ok()) {
        events_->Record(*run->pod, "Warning", "FailedHostPort", std::string(st.message()));
        Log().warn("pod {}/{}: {}", run->ns, run->name, st.ToString());
        continue;
      }
      run->host_ports.push_back(id);
      Log().info("pod {}/{}: hostPort {}:{} forwarded to {}:{}", run->ns, run->name, ip,
                 p.host_port(), run->ip, target);
    }
  }
}

void PodManager::CloseHostPorts(PodRun* run) {
  for (const auto& id : run->host_ports) host_ports_.Close(id);
  run->host_ports.clear();
}

void PodManager::ReleaseIp(const std::string& ip) {
  if (ip.empty() || ip == options_.node_ip) return;
  in_addr addr{};
  if (inet_pton(AF_INET, ip.c_str(), &addr) == 1) ips_in_use_.erase(ntohl(addr.s_addr));
}

absl::StatusOr<std::pair<PodRun*, ContainerRun*>> PodManager::FindContainer(
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

absl::StatusOr<runtime::ExecTarget> PodManager::Exec(const std::string& ns, const std::string& pod,
                                                     const std::string& uid,
                                                     const std::string& container) {
  absl::MutexLock lock(&mu_);
  auto found = FindContainer(ns, pod, uid, container);
  if (!found.ok()) return found.status();
  const ContainerRun* c = found->second;
  if (!c || !c->Running()) {
    return absl::FailedPreconditionError(fmt::format("container not found (\"{}\")", container));
  }
  return runtime::ExecTarget{c->env, c->dir, c->pid, c->isolated, c->identity, c->cgroups};
}

absl::StatusOr<std::string> PodManager::PodIp(const std::string& ns, const std::string& pod,
                                              const std::string& uid) {
  absl::MutexLock lock(&mu_);
  auto found = FindContainer(ns, pod, uid, "");
  if (!found.ok()) return found.status();
  const PodRun* run = found->first;
  if (run->ip.empty() || !run->AnyRunning()) {
    return absl::FailedPreconditionError("unable to forward port because pod is not running");
  }
  return run->ip;
}

std::vector<node::RunningContainer> PodManager::RunningContainers() {
  std::vector<node::RunningContainer> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [uid, run] : runs_) {
    for (const auto& c : run.containers) {
      if (c.Running()) out.push_back({run.ns, run.name, uid, c.name, c.pid});
    }
  }
  return out;
}

}  // namespace mkube::agent::pods
