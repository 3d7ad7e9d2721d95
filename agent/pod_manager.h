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
#include "agent/image.h"
#include "agent/pod_run.h"
#include "agent/process.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "proto/api/core.pb.h"

namespace mkube::agent {

struct PodManagerOptions {
  std::string node_name;
  std::string node_ip;
  std::string root_dir;             // pods live in <root>/pods/<uid>/
  std::string pod_cidr = "127.1.0.0/24";  // pod IPs are handed out from here
  std::string monitor_path = DefaultMonitorPath();  // the program that runs each container
  BackoffPolicy backoff;
  absl::Duration tick = absl::Milliseconds(100);
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

// Where a container's log is, for `logs`.
struct LogTarget {
  std::string path;
  // Whether that instance may still write to it (for follow).
  std::function<bool()> running;
};

// How to run a command in a container, for `exec`.
struct ExecTarget {
  std::vector<std::string> env;
  std::string dir;
};

// The kubelet's pod loop: runs the pods bound to this node as process groups, restarts them
// by their restartPolicy with back-off, stops them gracefully when deleted (then removes the
// object), and reports each pod's status whenever it changes.
//
// One thread changes the runs; the API calls a round decides on are made after it lets go of
// the lock.
class PodManager {
 public:
  PodManager(client::ApiClient* client, client::Informer<api::Pod>* pods, ImageStore* images,
             client::EventRecorder* events, PodManagerOptions options);
  ~PodManager();

  void Start();
  // Stops every container (SIGTERM, SIGKILL after `grace`) and the loop.
  void Stop(absl::Duration grace = absl::Seconds(5)) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs a round soon (an informer event, a child exit).
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);

  // The target's `running` takes the lock: do not call it with the lock held.
  absl::StatusOr<LogTarget> Logs(const std::string& ns, const std::string& pod,
                                 const std::string& uid, const std::string& container,
                                 bool previous) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<ExecTarget> Exec(const std::string& ns, const std::string& pod,
                                  const std::string& uid, const std::string& container)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Action {
    enum Kind { kPostStatus, kDelete } kind;
    std::shared_ptr<const api::Pod> pod;
    api::PodStatus status;
  };
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  void Round() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the probes that are due, off the pod loop's thread, and applies what they found.
  void ProbeLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void ApplyProbe(ContainerRun* c, PodRun* run, const std::string& kind, const api::Probe& probe,
                  const absl::Status& result, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PodRun* Adopt(const std::shared_ptr<const api::Pod>& pod, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BeginTerminating(PodRun* run, int64_t grace_seconds, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Step(PodRun* run, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartContainer(PodRun* run, ContainerRun* c, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After an instance ended: done, restart now, or restart after a back-off.
  void AfterExit(PodRun* run, ContainerRun* c, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(PodRun* run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How the running instance ended, once it has.
  std::optional<ExitInfo> Ended(ContainerRun* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReapMonitors() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Once, after the first list: pods this node ran that no longer exist.
  void SweepLeftovers(const std::set<std::string>& live) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pulls the container's image as its pull policy says, with the kubelet's events; null
  // (and the container waiting) when it cannot.
  std::optional<Image> PullImage(PodRun* run, ContainerRun* c, const api::Container& spec,
                                 absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A free pod address: `wanted` (the one the pod had) when it is free.
  std::string AllocateIp(const std::string& wanted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pod's run and the named container (null when the pod has no such container).
  absl::StatusOr<std::pair<PodRun*, ContainerRun*>> FindContainer(
      const std::string& ns, const std::string& pod, const std::string& uid,
      const std::string& container) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Do(const Action& a) ABSL_LOCKS_EXCLUDED(mu_);

  client::ApiClient* client_;
  client::Informer<api::Pod>* pods_;
  ImageStore* images_;
  client::EventRecorder* events_;
  const PodManagerOptions options_;
  // Set by the constructor, read-only after it: no lock needed.
  uint32_t ip_base_ = 0, ip_count_ = 0;

  // Wake-ups (Notify, Stop) are conditions on stopping_/poke_ that the waiters Await.
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool poke_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, PodRun> runs_ ABSL_GUARDED_BY(mu_);  // by pod uid
  std::set<uint32_t> ips_in_use_ ABSL_GUARDED_BY(mu_);
  std::vector<pid_t> monitors_ ABSL_GUARDED_BY(mu_);  // ended, not yet reaped
  bool swept_ ABSL_GUARDED_BY(mu_) = false;
  // Only the thread that calls Start and Stop (the owner) touches these.
  std::thread thread_;
  std::thread prober_;
};

}  // namespace mkube::agent
