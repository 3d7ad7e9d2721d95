#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/node/usage.h"
#include "agent/pods/pod_run.h"
#include "agent/pods/port_proxy.h"
#include "agent/runtime/container_exec.h"
#include "agent/runtime/image.h"
#include "agent/runtime/process.h"
#include "agent/runtime/process_runner.h"
#include "agent/runtime/sandbox.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::pods {

struct PodManagerOptions {
  std::string node_name;
  std::string node_ip;
  std::string root_dir;             // pods live in <root>/pods/<uid>/
  std::string pod_cidr = "127.1.0.0/24";  // pod IPs are handed out from here
  BackoffPolicy backoff;
  // How soon a pod with running containers is looked at again for exits (as the kubelet's
  // pod lifecycle events relist).
  absl::Duration resync = absl::Milliseconds(100);
  client::Clock* clock = client::RealClock();
  // What the host lets containers be held apart with (nothing: they run as the agent's
  // processes in the node's filesystem).
  runtime::HostIsolation isolation;
  int64_t pod_max_pids = 1024;  // each pod's processes at most (0: no limit)
};

// Where a container's log is, for `logs`.
struct LogTarget {
  std::string path;
  // Whether that instance may still write to it (for follow).
  std::function<bool()> running;
};

// The kubelet's pod loop: runs the pods bound to this node as process groups, restarts them
// by their restartPolicy with back-off, stops them gracefully when deleted (then removes the
// object), and reports each pod's status whenever it changes.
//
// Driven by keys ("namespace/name") in a work queue: the informer's events queue a pod's key,
// and so do the pod's own timers (a back-off ending, a grace period running out, the next look
// for exits while it runs). A sync decides under the lock and does its slow work (pulling
// images, starting processes, removing folders, calls to the apiserver) after letting go.
class PodManager {
 public:
  PodManager(client::ApiClient* client, client::Informer<api::Pod>* pods,
             runtime::ImageStore* images, client::EventRecorder* events,
             runtime::ProcessRunner* runner, PodManagerOptions options);
  ~PodManager();

  // Handlers for the pod informer: each event queues the pod's key.
  client::Informer<api::Pod>::Handlers Handlers();
  void Enqueue(const api::Pod& pod);
  // Starts the sync and probe threads. Before its first sync, once the pod cache has synced,
  // the sync thread stops what pods deleted while the agent was away left running.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops every container (SIGTERM, SIGKILL after `grace`, in real time) and the threads.
  void Stop(absl::Duration grace = absl::Seconds(5)) ABSL_LOCKS_EXCLUDED(mu_);
  // Without Start: syncs, on the caller's thread, every queued key that is due now; returns
  // how many. (How unit tests drive it.)
  int SyncReady() ABSL_LOCKS_EXCLUDED(mu_);

  // The target's `running` takes the lock: do not call it with the lock held.
  absl::StatusOr<LogTarget> Logs(const std::string& ns, const std::string& pod,
                                 const std::string& uid, const std::string& container,
                                 bool previous) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<runtime::ExecTarget> Exec(const std::string& ns, const std::string& pod,
                                           const std::string& uid, const std::string& container)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The address of a pod this node runs with a container running (for port forwarding).
  absl::StatusOr<std::string> PodIp(const std::string& ns, const std::string& pod,
                                    const std::string& uid) ABSL_LOCKS_EXCLUDED(mu_);
  // The containers running now (for the usage sampler).
  std::vector<node::RunningContainer> RunningContainers() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Action {
    enum Kind { kPostStatus, kDelete } kind;
    std::shared_ptr<const api::Pod> pod;
    api::PodStatus status;
  };
  // A container to start, decided under the lock and carried out without it.
  struct Launch {
    std::string uid, container, pod_name, ip;
    std::shared_ptr<const api::Pod> pod;
    std::string sandbox;  // the pod's folder
    pid_t pause = 0;      // the pod's PID namespace holder, when its containers share one
    api::Container spec;
    bool pull = false;     // the image is to be fetched (not merely already present)
    bool always = false;   // imagePullPolicy Always
    runtime::ProcessSpec process;  // argv, env and dir are filled in once the image is there
    std::string record_path, exit_path;
    int instance = 0;
    // What happened.
    absl::StatusOr<runtime::Image> image = absl::UnknownError("not pulled");
    absl::Duration pull_took;
    absl::StatusOr<runtime::ProcessRecord> record = absl::UnknownError("not started");
    // Why the container cannot be made as its spec asks (CreateContainerConfigError).
    absl::Status config;
  };
  // What one sync does once it has let go of the lock.
  struct Work {
    std::vector<Launch> launches;
    std::vector<Action> actions;
    std::vector<std::string> removals;  // sandboxes of pods that are done
    std::vector<std::string> removed_uids;     // and their uids (their cgroups go too)
    absl::Time wake = absl::InfiniteFuture();  // when the key wants another look
  };

  void Sync(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  // Under the lock: the pod's runs brought up to date with the pod object (nullptr: gone).
  void Plan(const std::string& key, const std::shared_ptr<const api::Pod>& pod, absl::Time now,
            Work* work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Without the lock: pulls the image and starts the process.
  void Carry(Launch* launch) ABSL_LOCKS_EXCLUDED(mu_);
  // The pod's PID namespace holder, when its containers share one (shareProcessNamespace):
  // the one running, else one started now (pid 0 when it cannot be). Takes the lock itself
  // and starts the process without it.
  pid_t EnsurePause(const std::string& uid, const std::string& sandbox, const api::Pod& pod)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Without the lock: the container's root and user, when the host can hold it apart.
  absl::Status Sandbox(Launch* launch, const runtime::HostIsolation& host) ABSL_LOCKS_EXCLUDED(mu_);
  // Under the lock: what a launch did, recorded in its container's run.
  void Launched(Launch& launch, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Under the lock: statuses to post, runs that are done, and when to look again.
  void Report(const std::string& key, absl::Time now, Work* work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Worker() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the probes that are due, off the sync thread, and applies what they found.
  void ProbeLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void ApplyProbe(ContainerRun* c, PodRun* run, const std::string& kind, const api::Probe& probe,
                  const absl::Status& result, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PodRun* Adopt(const std::shared_ptr<const api::Pod>& pod, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BeginTerminating(PodRun* run, int64_t grace_seconds, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Step(PodRun* run, absl::Time now, Work* work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Decides how the container's next instance starts (its image pull and process), or leaves
  // it waiting when its image may not be pulled.
  void PlanStart(PodRun* run, ContainerRun* c, absl::Time now, Work* work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After an instance ended: done, restart now, or restart after a back-off.
  void AfterExit(PodRun* run, ContainerRun* c, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How the running instance ended, once it has.
  std::optional<runtime::ExitInfo> Ended(ContainerRun* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReapMonitors() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pods this node ran that no longer exist (deleted while the agent was away): once, as soon
  // as the pod cache has synced.
  void SweepLeftovers() ABSL_LOCKS_EXCLUDED(mu_);
  void MaybeSweep() ABSL_LOCKS_EXCLUDED(mu_);
  std::string SandboxOf(const std::string& uid) const;
  // A free pod address: `wanted` (the one the pod had) when it is free.
  std::string AllocateIp(const std::string& wanted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseIp(const std::string& ip) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forwards the pod's hostPorts to its address (TCP), and stops forwarding them.
  void OpenHostPorts(PodRun* run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseHostPorts(PodRun* run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pod's run and the named container (null when the pod has no such container).
  absl::StatusOr<std::pair<PodRun*, ContainerRun*>> FindContainer(
      const std::string& ns, const std::string& pod, const std::string& uid,
      const std::string& container) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Posts a status or deletes a pod; false when it must be tried again.
  bool Do(const Action& a) ABSL_LOCKS_EXCLUDED(mu_);

  client::ApiClient* client_;
  client::Informer<api::Pod>* pods_;
  runtime::ImageStore* images_;
  client::EventRecorder* events_;
  runtime::ProcessRunner* runner_;
  const PodManagerOptions options_;
  client::Clock* const clock_;
  // Set by the constructor, read-only after it: no lock needed.
  uint32_t ip_base_ = 0, ip_count_ = 0;
  client::WorkQueue queue_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, PodRun> runs_ ABSL_GUARDED_BY(mu_);  // by pod uid
  std::set<uint32_t> ips_in_use_ ABSL_GUARDED_BY(mu_);
  std::vector<pid_t> monitors_ ABSL_GUARDED_BY(mu_);  // ended, not yet reaped
  PortProxy host_ports_;
  bool swept_ = false;  // only the syncing thread touches it
  // Only the thread that calls Start and Stop (the owner) touches these.
  std::thread worker_;
  std::thread prober_;
};

}  // namespace mkube::agent::pods
