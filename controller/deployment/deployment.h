#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "controller/deployment/util.h"
#include "controller/internal/controller.h"
#include "controller/internal/pods.h"
#include "proto/api/apps.pb.h"

namespace mkube::controller::deployment {

// Kubernetes' deployment controller: a Deployment owns ReplicaSets named by the hash of its
// pod template; a changed template rolls out to a new ReplicaSet, by RollingUpdate (within
// maxSurge above and maxUnavailable below spec.replicas) or Recreate (the old pods all gone
// first); scaling mid-rollout is shared out proportionally; revisions are annotations on the
// ReplicaSets (kept up to revisionHistoryLimit); the status carries replicas, updated, ready
// and available counts and the Available and Progressing conditions (progressDeadlineSeconds).
// Paused deployments scale but do not roll out.
class DeploymentController final : public Controller {
 public:
  using DeploymentPtr = std::shared_ptr<const api::Deployment>;

  DeploymentController(client::ApiClient* client, client::Informer<api::Deployment>* deployments,
                       client::Informer<api::ReplicaSet>* replica_sets,
                       client::Informer<api::Pod>* pods, client::EventRecorder* events,
                       client::Clock* clock);
  ~DeploymentController() override { Stop(); }

  absl::Status Sync(const std::string& key) override;

 private:
  // The deployment's ReplicaSets split into the one running its template and the others.
  struct Sets {
    RSPtr new_rs;  // null until created
    std::vector<RSPtr> old;
    std::vector<RSPtr> All() const;
  };

  void OnReplicaSet(const RSPtr& old_rs, const RSPtr& rs);
  void OnPodDeleted(const PodPtr& pod);
  std::vector<DeploymentPtr> Selecting(const api::ReplicaSet& rs) const;

  absl::StatusOr<std::vector<RSPtr>> ClaimReplicaSets(const api::Deployment& d);
  // Finds (with `create`, makes) the new ReplicaSet and brings revision annotations up to
  // date; may write the deployment's revision and status. What it writes replaces (or joins)
  // its entry in `owned`, so a second call works on the current objects.
  absl::StatusOr<Sets> GetSets(api::Deployment& d, std::vector<RSPtr>& owned, bool create);
  absl::StatusOr<RSPtr> CreateNewReplicaSet(api::Deployment& d, const Sets& sets,
                                            int64_t revision);
  absl::StatusOr<RSPtr> SyncNewReplicaSet(api::Deployment& d, RSPtr rs, int64_t revision);

  // Scaling (a paused deployment, a changed spec.replicas): proportionally over active sets.
  absl::Status ScaleOnly(api::Deployment& d, std::vector<RSPtr>& owned);
  bool IsScalingEvent(api::Deployment& d, std::vector<RSPtr>& owned);
  absl::Status Scale(const api::Deployment& d, Sets& sets);
  absl::Status RolloutRolling(api::Deployment& d, std::vector<RSPtr>& owned);
  absl::Status RolloutRecreate(api::Deployment& d, std::vector<RSPtr>& owned);
  absl::StatusOr<bool> ReconcileNew(const api::Deployment& d, Sets& sets);
  absl::StatusOr<bool> ReconcileOld(const api::Deployment& d, Sets& sets);
  // Sets rs to `replicas` (and its replica annotations); true when the size changed.
  absl::StatusOr<bool> ScaleReplicaSet(const api::Deployment& d, RSPtr* rs, int32_t replicas);
  bool OldPodsRunning(const Sets& sets) const;

  api::DeploymentStatus CalculateStatus(const api::Deployment& d, const Sets& sets) const;
  absl::Status SyncStatus(api::Deployment& d, const Sets& sets);
  absl::Status SyncRolloutStatus(api::Deployment& d, const Sets& sets);
  absl::Status CheckPaused(api::Deployment& d);
  // Writes the status if it changed; `d` becomes the object as stored.
  absl::Status WriteStatus(api::Deployment& d, const api::DeploymentStatus& status);
  // Deletes old, empty ReplicaSets beyond revisionHistoryLimit.
  absl::Status Cleanup(const api::Deployment& d, const std::vector<RSPtr>& old);

  client::ApiClient* const client_;
  client::Informer<api::Deployment>* const deployments_;
  client::Informer<api::ReplicaSet>* const replica_sets_;
  client::Informer<api::Pod>* const pods_;
  client::EventRecorder* const events_;
};

}  // namespace mkube::controller::deployment
