#pragma once

#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/runtime/image.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/event_recorder.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::node {

struct NodeOptions {
  std::string name;
  std::string ip;
  int agent_port = 0;  // where the apiserver reaches this agent (daemonEndpoints)
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;  // set on every start (the agent's own facts)
  std::vector<api::Taint> taints;  // only when the node is first registered
  std::map<std::string, std::string> capacity;  // cpu, memory, pods; from the machine if unset
  std::string pod_cidr;
  std::string version;
  int lease_duration_seconds = 40;
  absl::Duration renew_interval = absl::Seconds(10);
  // The status is written when it changes and at least this often (its heartbeat).
  absl::Duration status_interval = absl::Minutes(1);
};

// Registers the Node, renews its Lease in kube-node-lease and keeps its status (Ready, the
// addresses, capacity, images) current, as the kubelet does.
class NodeStatusManager {
 public:
  NodeStatusManager(client::ApiClient* client, runtime::ImageStore* images,
                    client::EventRecorder* events, NodeOptions options,
                    client::Clock* clock = client::RealClock());
  ~NodeStatusManager() { Stop(); }

  // Creates the Node, or takes over an existing one of the same name (keeping its spec: taints
  // and cordons belong to the cluster's admins once it exists), writes its status and its
  // Lease, and says so in the node's events (Starting, NodeReady), as the kubelet does.
  absl::Status Register();
  void Start();
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  api::NodeStatus BuildStatus(absl::Time now) const;
  // One pass of the loop: renews the lease when due, writes the status when it changed or
  // its heartbeat is due. (The loop's thread calls it; tests call it directly.)
  void Sync();

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status RenewLease(absl::Time now);
  absl::Status PostStatus(api::NodeStatus status, absl::Time now);

  client::ApiClient* client_;
  runtime::ImageStore* images_;
  client::EventRecorder* events_;
  const NodeOptions options_;
  client::Clock* const clock_;
  const api::NodeStatus machine_;  // the parts of the status read from the machine once
  // Only the loop's thread (or Register, before it starts) uses these.
  std::string lease_version_;  // resourceVersion of our Lease as last written
  std::optional<api::NodeStatus> posted_;  // status last written, without heartbeat times
  absl::Time posted_at_ = absl::InfinitePast();
  absl::Time renewed_at_ = absl::InfinitePast();
  std::string ready_since_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// The machine's capacity as Kubernetes reports it: cpu cores, memory in Ki, 110 pods.
std::map<std::string, std::string> MachineCapacity();

}  // namespace mkube::agent::node
