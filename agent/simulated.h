#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/node/node_status.h"
#include "agent/runtime/image.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/workqueue.h"

namespace mkube::agent {

struct SimulatedOptions {
  int count = 0;
  std::string prefix = "sim";  // nodes are <prefix>-0000, <prefix>-0001, ...
  // Every node is registered with these (capacity, labels, taints, lease timing).
  node::NodeOptions node;
  int zones = 0;    // > 0: topology.kubernetes.io/zone=zone-<i % zones>
  // Threads writing pod statuses and deletions: real nodes each write their own, so many
  // are in flight at once.
  int workers = 16;
};

// How long a simulated pod that ends (restartPolicy Never or OnFailure) runs, and how it
// ends: the annotations simulated.mkube.io/run-for (a duration, default 1s) and
// simulated.mkube.io/exit-code (default 0: Succeeded; else Failed).
inline constexpr char kRunForAnnotation[] = "simulated.mkube.io/run-for";
inline constexpr char kExitCodeAnnotation[] = "simulated.mkube.io/exit-code";

// Many Nodes from one process, without forking anything, as KWOK has them: each is
// registered and keeps its Lease and status fresh like a real agent's; pods bound to them
// are reported Running at once (their containers ready), pods that should end end after
// their run-for, and deleted pods go at once (the agent's final delete). mkubectl sees
// ordinary nodes; real and simulated nodes can share a cluster.
class SimulatedNodes {
 public:
  SimulatedNodes(client::ApiClient* client, runtime::ImageStore* images,
                 client::EventRecorder* events, SimulatedOptions options);
  ~SimulatedNodes() { Stop(); }

  // Registers every node (several at a time).
  absl::Status Register();
  // Keeps leases and statuses fresh, and runs the pods' lifecycle, until Stop.
  void Start();
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  const std::vector<std::string>& names() const { return names_; }

 private:
  static constexpr int kNodeThreads = 8;
  void NodeLoop(int thread) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes pods from the queue and starts their next step; at most kPodCallsInFlight wait
  // for the apiserver at once, none of them holding a thread.
  void PodWorker() ABSL_LOCKS_EXCLUDED(mu_);
  // Starts one pod's next step; done(false) when it should be tried again after a back-off.
  void SyncPod(const std::string& key, std::function<void(bool)> done);
  void PostStatus(const api::Pod& pod, const std::string& phase, int exit_code,
                  std::function<void(absl::Status)> done);
  static constexpr int kPodCallsInFlight = 256;

  client::ApiClient* const client_;
  const SimulatedOptions options_;
  std::vector<std::string> names_;
  std::set<std::string> ours_;  // names_, to look up
  std::vector<std::unique_ptr<node::NodeStatusManager>> nodes_;
  client::Informer<api::Pod> pods_;
  client::WorkQueue queue_;
  std::vector<std::thread> threads_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_ip_ ABSL_GUARDED_BY(mu_) = 0;
  int pod_calls_ ABSL_GUARDED_BY(mu_) = 0;  // pods' steps waiting for the apiserver
};

}  // namespace mkube::agent
