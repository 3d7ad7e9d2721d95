#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/node/usage.h"
#include "agent/pods/pod_network.h"
#include "agent/pods/pod_run.h"
#include "agent/pods/probe_manager.h"
#include "agent/runtime/container_exec.h"
#include "agent/runtime/container_runtime.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::pods {

struct PodWorkersOptions {
  std::string node_name;
  std::string node_ip;
  std::string root_dir;  // pods live in <root>/pods/<uid>/
  BackoffPolicy backoff;
  // How soon a pod with running containers is looked at again for exits (as the kubelet's
  // pod lifecycle events relist).
  absl::Duration resync = absl::Milliseconds(100);
  client::Clock* clock = client::RealClock();
};

// Where a container's log is, for `logs`.
struct LogTarget {
  std::string path;
  // Whether that instance may still write to it (for follow).
  std::function<bool()> running;
};

// The kubelet's pod workers: run the pods bound to this node as process groups, restart them
// by their restartPolicy with back-off, stop them gracefully when deleted (then remove the
// object), and report each pod's status whenever it changes. They decide; the container
// runtime starts, watches and stops processes, the pod network gives pods their addresses and
// hostPorts, and the probe manager probes their containers.
//
// Driven by keys ("namespace/name") in a work queue: the informer's events queue a pod's key,
// and so do the pod's own timers (a back-off ending, a grace period running out, the next look
// for exits while it runs). A sync decides under the lock and does its slow work (pulling
// images, starting processes, removing folders, calls to the apiserver) after letting go.
class PodWorkers final : private ProbedContainers {
 public:
  PodWorkers(client::ApiClient* client, client::Informer<api::Pod>* pods,
             runtime::ContainerRuntime* runtime, PodNetwork* network, client::EventRecorder* events,
             PodWorkersOptions options);
  ~PodWorkers() override;

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
  // The images of every container of the pods this node runs or is stopping (in use, for
  // the image garbage collector).
  std::vector<std::string> ImagesInUse() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A write to the apiserver a sync makes once it has let go of the lock.
  struct ApiUpdate {
    enum Kind { kPostStatus, kDelete } kind;
    std::shared_ptr<const api::Pod> pod;
    api::PodStatus status;
  };
  // What one sync does once it has let go of the lock.
  struct SyncWork {
    std::vector<runtime::ContainerStart> starts;
    std::vector<ApiUpdate> updates;
    std::vector<std::pair<std::string, std::string>> removed;  // pods done: uid and folder
    absl::Time wake = absl::InfiniteFuture();                  // when the key wants another look
  };

  void SyncLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void Sync(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  // Under the lock: the pod's runs brought up to date with the pod object (nullptr: gone).
  void Plan(const std::string& key, const std::shared_ptr<const api::Pod>& pod, absl::Time now,
            SyncWork* work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Under the lock: what a start did, recorded in its container's run.
  void RecordStart(runtime::ContainerStart& start, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Under the lock: statuses to post, runs that are done (removed), and when to look again.
  void ReportAndRetire(const std::string& key, absl::Time now, SyncWork* work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When the run wants another look, at the latest.
  absl::Time NextLook(const PodRun& run, absl::Time now) const;
  // Posts a status or deletes a pod; false when it must be tried again.
  bool PostStatusOrDelete(const ApiUpdate& update) ABSL_LOCKS_EXCLUDED(mu_);

  // The pod's run, new: its folders, address, hostPorts and what an agent that ran before left
  // running of it.
  PodRun* Adopt(const std::shared_ptr<const api::Pod>& pod, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The container's run, new, with its instance still running (or ended while the agent was
  // away) adopted.
  ContainerRun AdoptContainer(const PodRun& run, const api::Container& spec, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BeginTerminating(PodRun* run, int64_t grace_seconds, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Each container of the run: exits noticed, kills past their deadline sent, starts planned.
  void SyncContainers(PodRun* run, absl::Time now, SyncWork* work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How the running instance ended, recorded (its process group killed), and what comes next
  // decided.
  void RecordExit(PodRun* run, ContainerRun* c, const runtime::ExitInfo& exit, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Decides how the container's next instance starts (its image pull and process), or leaves
  // it waiting when its image may not be pulled.
  void PlanStart(PodRun* run, ContainerRun* c, absl::Time now, SyncWork* work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After an instance ended: done, restart now, or restart after a back-off.
  void PlanRestart(PodRun* run, ContainerRun* c, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How the running instance ended, once it has.
  std::optional<runtime::ExitInfo> ExitOf(const ContainerRun& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stop's look at the containers: exits noticed, SIGKILL once `deadline` passed; whether any
  // still runs.
  bool AnyStillRunning(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Pods this node ran that no longer exist (deleted while the agent was away): once, as soon
  // as the pod cache has synced.
  void SweepLeftovers() ABSL_LOCKS_EXCLUDED(mu_);
  void SweepLeftoversOnce() ABSL_LOCKS_EXCLUDED(mu_);
  std::string PodDir(const std::string& uid) const;
  // The pod's run and the named container (null when the pod has no such container).
  absl::StatusOr<std::pair<PodRun*, ContainerRun*>> FindContainer(const std::string& ns,
                                                                  const std::string& pod,
                                                                  const std::string& uid,
                                                                  const std::string& container)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // For the probe manager (ProbedContainers).
  std::vector<DueProbe> DueProbes() override ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<std::string> RecordProbeResult(const DueProbe& probe,
                                               const absl::Status& result) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void Resync(const std::string& pod_key) override;

  client::ApiClient* client_;
  client::Informer<api::Pod>* pods_;
  runtime::ContainerRuntime* runtime_;
  PodNetwork* network_;
  client::EventRecorder* events_;
  const PodWorkersOptions options_;
  client::Clock* const clock_;
  client::WorkQueue queue_;
  ProbeManager probes_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, PodRun> runs_ ABSL_GUARDED_BY(mu_);  // by pod uid
  bool swept_ = false;                                       // only the syncing thread touches it
  // Only the thread that calls Start and Stop (the owner) touches it.
  std::thread worker_;
};

}  // namespace mkube::agent::pods
