#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/runtime/image.h"
#include "agent/runtime/process.h"
#include "agent/runtime/process_runner.h"
#include "agent/runtime/sandbox.h"
#include "client/clock.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::runtime {

struct RuntimeOptions {
  client::Clock* clock = client::RealClock();
  // What the host lets containers be held apart with (nothing: they run as the agent's
  // processes in the node's filesystem).
  HostIsolation isolation;
  int64_t pod_max_pids = 1024;  // each pod's processes at most (0: no limit)
};

// A container instance to start: decided by the pod workers under their lock, carried out by
// the runtime without it (StartContainer), then recorded by the pod workers again.
struct ContainerStart {
  std::string uid, container, pod_name, ip;
  std::shared_ptr<const api::Pod> pod;
  std::string pod_dir;
  pid_t pause_pid = 0;  // the pod's PID namespace holder, when its containers share one
  api::Container spec;
  bool pull = false;    // the image is to be fetched (not merely already present)
  bool always = false;  // imagePullPolicy Always
  ProcessSpec process;  // argv, env and dir are filled in once the image is there
  std::string record_path, exit_path;
  int instance = 0;
  // What happened.
  absl::StatusOr<Image> image = absl::UnknownError("not pulled");
  absl::Duration pull_took;
  absl::StatusOr<ProcessRecord> record = absl::UnknownError("not started");
  // Why the container cannot be made as its spec asks (CreateContainerConfigError).
  absl::Status config;
};

// The node's container runtime, as the kubelet's runtime manager is to the pod workers: it
// pulls images, holds containers apart (root, user, cgroups) and starts them as processes
// through the ProcessRunner, finds what an agent that ran before left running, tells how an
// instance ended, and keeps each pod's pause process (the holder of a PID namespace its
// containers share). The pod workers decide what runs; this carries it out.
//
// Its lock guards the pause processes and the monitors still to be reaped; the only calls made
// under it are to the ProcessRunner, which calls nothing back.
class ContainerRuntime {
 public:
  ContainerRuntime(ImageStore* images, ProcessRunner* runner, RuntimeOptions options);

  const HostIsolation& isolation() const { return options_.isolation; }
  bool ImagePresent(const std::string& image) const { return images_->Present(image); }

  // Adoption, after the agent restarted. The instance recorded at `record_path`, when it still
  // runs or ended while the agent was away (its exit is then at `exit_path`).
  std::optional<ProcessRecord> FindInstance(const std::string& record_path,
                                            const std::string& exit_path);
  // The pod is this runtime's from now on: its pause process, when one started earlier still
  // runs, is taken over.
  void AddPod(const std::string& uid, const std::string& pod_dir) ABSL_LOCKS_EXCLUDED(mu_);
  // The pod is done: its pause process (and what is left in its namespace) is killed.
  void RemovePod(const std::string& uid) ABSL_LOCKS_EXCLUDED(mu_);
  // What a pod done leaves on the node: its folder and its cgroups.
  void RemovePodFiles(const std::string& uid, const std::string& pod_dir);
  // Kills what a pod deleted while the agent was away left running (found by the process
  // records in its folder).
  void KillLeftovers(const std::string& uid, const std::string& pod_dir);

  // Pulls the image, sets the container's sandbox up and starts its process; what happened is
  // in `start`.
  void StartContainer(ContainerStart* start) ABSL_LOCKS_EXCLUDED(mu_);
  // The pod's pause process, when its containers share a PID namespace (shareProcessNamespace):
  // the one running, else one started now (pid 0 when it cannot be, or the pod is gone).
  pid_t EnsurePauseProcess(const std::string& uid, const std::string& pod_dir, const api::Pod& pod)
      ABSL_LOCKS_EXCLUDED(mu_);

  // How a running instance ended, once it has (`exit_path` its exit record, `monitor` the
  // process that waits for it).
  std::optional<ExitInfo> ExitOf(const std::string& container, const std::string& exit_path,
                                 pid_t monitor, bool adopted) ABSL_LOCKS_EXCLUDED(mu_);
  // Reaps the monitors that have ended (no zombies left behind).
  void ReapMonitors() ABSL_LOCKS_EXCLUDED(mu_);

  // Signals the process group the container's first process leads.
  void Signal(pid_t pid, int sig) { runner_->Signal(pid, sig); }
  // On the agent's stop: every pause process is killed.
  void KillPauseProcesses() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A pod's pause process (pid 0: none), and whether an agent that ran before started it.
  struct Pause {
    ProcessRecord record;
    bool adopted = false;
  };

  // Without the lock: the container's root, user and cgroups, when the host can hold it apart.
  absl::Status SetUpSandbox(ContainerStart* start) ABSL_LOCKS_EXCLUDED(mu_);
  void KillPause(Pause* pause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ImageStore* images_;
  ProcessRunner* runner_;
  const RuntimeOptions options_;
  client::Clock* const clock_;

  absl::Mutex mu_;
  std::map<std::string, Pause> pauses_ ABSL_GUARDED_BY(mu_);  // by pod uid, every pod added
  std::vector<pid_t> monitors_ ABSL_GUARDED_BY(mu_);          // ended, not yet reaped
};

}  // namespace mkube::agent::runtime
