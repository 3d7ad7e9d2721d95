#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "controller/internal/pods.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::controller::disruption {

// Kubernetes' disruption controller: keeps each PodDisruptionBudget's status (expected pods,
// desired and current healthy, disruptions allowed) current, which the eviction subresource
// charges. With minAvailable as a number the pods themselves are expected; with a percentage
// or maxUnavailable the scale of their controllers (a ReplicaSet's, or its Deployment's, a
// ReplicationController's). A pod the apiserver evicted counts as disrupted until it is seen
// going (or two minutes pass).
class DisruptionController final : public Controller {
 public:
  static constexpr absl::Duration kDisruptedTimeout = absl::Minutes(2);

  DisruptionController(client::ApiClient* client,
                       client::Informer<api::PodDisruptionBudget>* budgets,
                       client::Informer<api::Pod>* pods,
                       client::Informer<api::ReplicaSet>* replica_sets,
                       client::Informer<api::ReplicationController>* replication_controllers,
                       client::Informer<api::Deployment>* deployments, client::Clock* clock);
  ~DisruptionController() override { Stop(); }

  absl::Status Sync(const std::string& key) override;

 private:
  void EnqueueBudgetsOf(const api::Pod& pod);
  // How many pods the controllers of `pods` want.
  absl::StatusOr<int32_t> ControllersScale(const std::vector<PodPtr>& pods) const;

  client::ApiClient* const client_;
  client::Informer<api::PodDisruptionBudget>* const budgets_;
  client::Informer<api::Pod>* const pods_;
  client::Informer<api::ReplicaSet>* const replica_sets_;
  client::Informer<api::ReplicationController>* const replication_controllers_;
  client::Informer<api::Deployment>* const deployments_;
};

}  // namespace mkube::controller::disruption
