#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::controller::nodelifecycle {

inline constexpr char kNotReadyTaint[] = "node.kubernetes.io/not-ready";
inline constexpr char kUnreachableTaint[] = "node.kubernetes.io/unreachable";
inline constexpr char kUnschedulableTaint[] = "node.kubernetes.io/unschedulable";

struct NodeLifecycleOptions {
  // A node whose Lease (and status) have not moved for this long is lost.
  absl::Duration grace_period = absl::Seconds(50);
  // How often nodes are looked at.
  absl::Duration monitor_period = absl::Seconds(5);
  // Nodes per second that may get a NoExecute taint, in each zone; a zone with more than
  // `large_cluster_threshold` nodes, at least `unhealthy_zone_threshold` of them not ready,
  // gets the secondary rate; a smaller one none.
  double eviction_rate = 0.1;
  double secondary_eviction_rate = 0.01;
  int large_cluster_threshold = 50;
  double unhealthy_zone_threshold = 0.55;
};

// Kubernetes' node lifecycle controller: a node whose Lease has gone unrenewed for the grace
// period gets its conditions set to Unknown ("Kubelet stopped posting node status."), the
// taints its Ready condition calls for (not-ready or unreachable, NoSchedule at once and
// NoExecute at the eviction rate of its zone; unschedulable:NoSchedule for a cordoned node),
// and its pods marked not ready (reason NodeLost, which mkubectl prints as Unknown). When
// every node of every zone is not ready, no NoExecute taint is kept (nothing is evicted: the
// trouble is more likely the control plane's than every node's). A node that is Ready again
// loses the taints.
class NodeLifecycleController final : public Controller {
 public:
  NodeLifecycleController(client::ApiClient* client, client::Informer<api::Node>* nodes,
                          client::Informer<api::Lease>* leases, client::Informer<api::Pod>* pods,
                          client::EventRecorder* events, client::Clock* clock,
                          NodeLifecycleOptions options);
  ~NodeLifecycleController() override { Stop(); }

  // Keys: "monitor" (the periodic pass) and "node/<name>" (a node changed).
  absl::Status Sync(const std::string& key) override;

 private:
  enum class ZoneState { kNormal, kPartialDisruption, kFullDisruption };
  struct Health {
    absl::Time probe;  // when the node last showed a sign of life, by our clock
    std::string renew_time, heartbeat;
  };

  absl::Status Monitor();
  // Sets Unknown conditions on a node that is lost; the node as it is now.
  absl::StatusOr<std::shared_ptr<const api::Node>> CheckHealth(
      const std::shared_ptr<const api::Node>& cached, absl::Time now);
  absl::Status MarkPodsNotReady(const api::Node& node, absl::Time now);
  // Brings the node's condition taints to what its conditions call for. NoExecute taints are
  // added only when `may_taint` (the zone's rate allows it).
  absl::Status ReconcileTaints(const api::Node& node, bool may_taint, bool* tainted);
  bool MayTaint(const std::string& zone, ZoneState state, size_t zone_size, absl::Time now);

  client::ApiClient* const client_;
  client::Informer<api::Node>* const nodes_;
  client::Informer<api::Lease>* const leases_;
  client::Informer<api::Pod>* const pods_;
  client::EventRecorder* const events_;
  const NodeLifecycleOptions options_;

  absl::Mutex mu_;
  std::map<std::string, Health> health_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> next_taint_ ABSL_GUARDED_BY(mu_);  // by zone
  bool all_disrupted_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mkube::controller::nodelifecycle
