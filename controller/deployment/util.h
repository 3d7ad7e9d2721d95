#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "proto/api/apps.pb.h"

// The pure arithmetic of Kubernetes' deployment controller (deployment/util): revisions,
// templates compared but for their hash, surge and unavailability, how many replicas the new
// ReplicaSet may have, and when a rollout counts as complete, progressing or timed out.
// Table-tested on its own.
namespace mkube::controller::deployment {

inline constexpr char kRevision[] = "deployment.kubernetes.io/revision";
inline constexpr char kRevisionHistory[] = "deployment.kubernetes.io/revision-history";
inline constexpr char kDesiredReplicas[] = "deployment.kubernetes.io/desired-replicas";
inline constexpr char kMaxReplicas[] = "deployment.kubernetes.io/max-replicas";
inline constexpr char kPodTemplateHash[] = "pod-template-hash";

// Progressing condition reasons, as Kubernetes names them.
inline constexpr char kNewRSCreated[] = "NewReplicaSetCreated";
inline constexpr char kFoundNewRS[] = "FoundNewReplicaSet";
inline constexpr char kRSUpdated[] = "ReplicaSetUpdated";
inline constexpr char kNewRSAvailable[] = "NewReplicaSetAvailable";
inline constexpr char kTimedOut[] = "ProgressDeadlineExceeded";
inline constexpr char kPaused[] = "DeploymentPaused";
inline constexpr char kResumed[] = "DeploymentResumed";

using RSPtr = std::shared_ptr<const api::ReplicaSet>;

// The most pods above spec.replicas a rolling update may run (0 for Recreate).
int32_t MaxSurge(const api::Deployment& d);
// The most replicas a rolling update may have unavailable: never more than spec.replicas,
// and 1 when both this and maxSurge would be 0 (a rollout must be able to move).
int32_t MaxUnavailable(const api::Deployment& d);

// Whether two templates are the same but for the pod-template-hash label.
bool EqualIgnoreHash(const api::PodTemplateSpec& a, const api::PodTemplateSpec& b);

// The ReplicaSet's revision annotation (0 without one).
int64_t Revision(const api::ReplicaSet& rs);
int64_t MaxRevision(const std::vector<RSPtr>& sets);
// The ReplicaSet running the deployment's template (the oldest, should there be several).
RSPtr FindNewReplicaSet(const api::Deployment& d, const std::vector<RSPtr>& sets);
// Those with replicas in their spec.
std::vector<RSPtr> Active(const std::vector<RSPtr>& sets);

int32_t SpecReplicas(const std::vector<RSPtr>& sets);
int32_t StatusReplicas(const std::vector<RSPtr>& sets);
int32_t ReadyReplicas(const std::vector<RSPtr>& sets);
int32_t AvailableReplicas(const std::vector<RSPtr>& sets);
// The desired-replicas annotation, if the ReplicaSet has a valid one.
std::optional<int32_t> DesiredReplicasAnnotation(const api::ReplicaSet& rs);

// How many replicas the new ReplicaSet should have now: all of them for Recreate; for a
// rolling update as many more as the surge allows, up to spec.replicas.
int32_t NewReplicaSetReplicas(const api::Deployment& d, const std::vector<RSPtr>& all,
                              const api::ReplicaSet& new_rs);
// The new ReplicaSet has every replica, desired and available.
bool IsSaturated(const api::Deployment& d, const api::ReplicaSet* new_rs);
// The share of a proportional scale that falls to one ReplicaSet (kube's GetProportion).
int32_t Proportion(const api::ReplicaSet& rs, const api::Deployment& d, int32_t to_add,
                   int32_t added);

bool Complete(const api::Deployment& d, const api::DeploymentStatus& status);
// Whether `status` moved on from the deployment's last one.
bool Progressing(const api::Deployment& d, const api::DeploymentStatus& status);
bool TimedOut(const api::Deployment& d, const api::DeploymentStatus& status, absl::Time now);
bool HasProgressDeadline(const api::Deployment& d);

const api::Condition* FindCondition(const api::DeploymentStatus& status, const std::string& type);
// Sets a condition as Kubernetes' SetDeploymentCondition: nothing changes when status and
// reason are the same; a condition keeps its transition time while its status stays.
void SetCondition(api::DeploymentStatus* status, api::Condition c);
void RemoveCondition(api::DeploymentStatus* status, const std::string& type);
api::Condition NewCondition(const std::string& type, const std::string& status,
                            const std::string& reason, const std::string& message, absl::Time now);

}  // namespace mkube::controller::deployment
