#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/pods/pod_run.h"
#include "agent/pods/prober.h"
#include "agent/runtime/container_runtime.h"
#include "client/clock.h"
#include "client/event_recorder.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::pods {

// A probe due now, with a copy of everything running it needs (it runs holding no lock).
struct DueProbe {
  std::string uid, container, kind;  // kind: Startup, Liveness or Readiness
  pid_t pid;                         // the instance probed
  api::Probe probe;
  api::Container spec;
  ProbeTarget target;
};

// Whose containers the prober probes: the pod workers, which keep each container's probe
// states (pod_run.h) under their lock.
class ProbedContainers {
 public:
  virtual ~ProbedContainers() = default;
  // The probes due now (ProbeManager::CollectDue over the pods that are not stopping).
  virtual std::vector<DueProbe> DueProbes() = 0;
  // Applies a probe's result to the instance it probed (ProbeManager::RecordResult); the key of
  // its pod, or nothing when that instance is gone.
  virtual std::optional<std::string> RecordProbeResult(const DueProbe& probe,
                                                       const absl::Status& result) = 0;
  // A probed pod's status may have changed: it is synced again.
  virtual void Resync(const std::string& pod_key) = 0;
};

// The kubelet's prober manager: runs the probes of the running containers, as their specs
// time them, on a thread of its own (off the sync thread), and says what each result means:
// ready or not, started or not, or killed to be restarted by its pod's policy.
class ProbeManager {
 public:
  ProbeManager(ProbedContainers* pods, runtime::ContainerRuntime* runtime,
               client::EventRecorder* events, client::Clock* clock);
  ~ProbeManager() { Stop(); }

  void Start();
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // The probes of the pod's running containers due at `now` (none of an instance being
  // killed; a container's startup probe, until it succeeds, before its others).
  static void CollectDue(const PodRun& run, absl::Time now, std::vector<DueProbe>* due);
  // A new instance's probes: none has succeeded (liveness counts as passing until it fails),
  // each runs first after its initialDelaySeconds.
  static void StartProbing(ContainerRun* c, const api::Container& spec, absl::Time now);
  // An instance adopted after the agent restarted: it has been running all along (so it has
  // started), and is probed again at once.
  static void ResumeProbing(ContainerRun* c, absl::Time now);
  // What a result means: after failureThreshold failures in a row a readiness probe makes the
  // container unready, a liveness or startup probe gets it killed (SIGKILL from its kill_at).
  void RecordResult(ContainerRun* c, PodRun* run, const std::string& kind, const api::Probe& probe,
                    const absl::Status& result, absl::Time now);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  ProbedContainers* const pods_;
  runtime::ContainerRuntime* const runtime_;
  client::EventRecorder* const events_;
  client::Clock* const clock_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // only the thread that calls Start and Stop (the owner) touches it
};

}  // namespace mkube::agent::pods
