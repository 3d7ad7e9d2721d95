#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/runtime/sandbox_spec.h"
#include "api/object.h"
#include "client/client.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::pods {

// Back-off between restarts of a crashing container and between failed image pulls, as the
// kubelet's: 10 s doubling up to 5 min; reset after a container ran 10 min without trouble.
struct BackoffPolicy {
  absl::Duration initial = absl::Seconds(10);
  absl::Duration max = absl::Minutes(5);
  absl::Duration reset_after = absl::Minutes(10);
};

// Where one of a container's probes stands.
struct ProbeState {
  absl::Time next = absl::InfiniteFuture();  // when it runs next
  int successes = 0, failures = 0;           // in a row
  bool ok = false;
};

// One container of a pod on this node: its current process, if any, and what the status
// needs to say about it.
struct ContainerRun {
  std::string name;
  int restart_count = 0;
  pid_t pid = 0;         // the running instance's process group leader; 0 when none runs
  pid_t monitor = 0;     // the process that waits for it (ours unless adopted)
  bool adopted = false;  // started by an earlier run of the agent
  std::string container_id;
  std::string image_id;
  absl::Time started_at;
  std::string log_dir;
  // How the instance that ran last ended, and the one before it.
  std::optional<api::ContainerStateTerminated> last, previous;
  // Set while not running: ContainerCreating, ErrImagePull, CrashLoopBackOff, ...
  std::string waiting_reason, waiting_message;
  absl::Time next_start = absl::InfinitePast();  // not before (back-off)
  absl::Duration backoff = absl::ZeroDuration();
  absl::Duration pull_backoff = absl::ZeroDuration();
  absl::Time pull_failed_at = absl::InfinitePast();
  bool done = false;  // terminated and will not be started again
  // Probes of the running instance; a liveness failure kills it (SIGKILL from kill_at on).
  ProbeState liveness, readiness, startup;
  absl::Time kill_at = absl::InfiniteFuture();
  // The environment and folder its processes run with, and who they are (for exec).
  std::vector<std::string> env;
  std::string dir;
  bool isolated = false;
  runtime::Identity identity;
  std::vector<std::string> cgroups;

  // The files of instance n (0 = the first run): its log, its process record and the exit
  // record its monitor writes.
  std::string LogPath(int instance) const;
  std::string RecordPath(int instance) const;
  std::string ExitPath(int instance) const;
  bool Running() const { return pid > 0; }
  // Records how the instance that ran last ended (the one before becomes `previous`).
  void RecordEnd(api::ContainerStateTerminated how);
};

// A pod this node runs.
struct PodRun {
  std::string uid, ns, name;
  std::shared_ptr<const api::Pod> pod;  // the newest version seen
  std::string pod_dir;                  // the pod's folder on this node
  std::string ip;
  absl::Time start_time;
  std::vector<ContainerRun> containers;
  bool terminating = false;
  // Adopted this round: its first status (ContainerCreating) goes out before anything starts.
  bool fresh = true;
  absl::Time kill_at = absl::InfiniteFuture();  // SIGKILL what still runs from then on
  bool gone = false;                            // the API object no longer exists
  std::optional<api::PodStatus> posted_status;  // the status last written
  // Why the pod's volumes cannot be set up here (empty when they can): its containers wait
  // in ContainerCreating, as the kubelet's do when a mount fails.
  std::string mount_error;

  ContainerRun* Find(const std::string& container);
  const ContainerRun* Find(const std::string& container) const;
  // The container's spec in the newest version of the pod (null if it has none of that name).
  const api::Container* Spec(const std::string& container) const;
  bool AnyRunning() const;
};

using api::Rfc3339;

// The node's last word on a pod it has stopped: delete it now (grace 0), this very pod (its
// uid). Ok also when it is gone already or was replaced by another of the same name.
absl::Status FinalDelete(client::ApiClient* client, const api::ObjectMeta& meta);

// Pod phase from its containers, as the kubelet computes it: Pending until every container has
// started once; Running while any runs or will be restarted; then Succeeded when every one
// exited 0, else Failed.
std::string PodPhase(const PodRun& run);

// The whole status the node reports for the pod; `host_ip` is the node's address and `now`
// stamps conditions that change.
api::PodStatus BuildStatus(const PodRun& run, const std::string& host_ip, absl::Time now);

}  // namespace mkube::agent::pods
