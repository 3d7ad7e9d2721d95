// How a deployment moves between its ReplicaSets: scaling, rolling updates and Recreate.
#include <algorithm>
#include <map>
#include <set>

#include "base/status.h"
#include "controller/deployment/deployment.h"
#include "controller/internal/indexes.h"
#include "controller/internal/owner.h"
#include "fmt/format.h"

namespace mkube::controller::deployment {
namespace {

bool CreatedBefore(const RSPtr& a, const RSPtr& b) {
  if (a->metadata().creation_timestamp() != b->metadata().creation_timestamp()) {
    return a->metadata().creation_timestamp() < b->metadata().creation_timestamp();
  }
  return a->metadata().name() < b->metadata().name();
}

// With spec.replicas `desired` and the surge `most`: whether rs's annotations say otherwise.
bool AnnotationsStale(const api::ReplicaSet& rs, int32_t desired, int32_t most) {
  const auto& ann = rs.metadata().annotations();
  auto d = ann.find(kDesiredReplicas);
  auto m = ann.find(kMaxReplicas);
  return d == ann.end() || d->second != std::to_string(desired) || m == ann.end() ||
         m->second != std::to_string(most);
}

}  // namespace

absl::StatusOr<bool> DeploymentController::ScaleReplicaSet(const api::Deployment& d, RSPtr* rs,
                                                           int32_t replicas) {
  const int32_t from = (*rs)->spec().replicas();
  const int32_t desired = d.spec().replicas(), most = desired + MaxSurge(d);
  const bool resize = from != replicas;
  if (!resize && !AnnotationsStale(**rs, desired, most)) return false;
  api::ReplicaSet copy = **rs;
  copy.mutable_spec()->set_replicas(replicas);
  auto* ann = copy.mutable_metadata()->mutable_annotations();
  (*ann)[kDesiredReplicas] = std::to_string(desired);
  (*ann)[kMaxReplicas] = std::to_string(most);
  MKUBE_ASSIGN_OR_RETURN(auto updated, client_->Update<api::ReplicaSet>(
                                           "replicasets", d.metadata().namespace_(), copy));
  *rs = std::make_shared<const api::ReplicaSet>(std::move(updated));
  if (resize) {
    events_->Record(d, "Normal", "ScalingReplicaSet",
                    fmt::format("Scaled {} replica set {} from {} to {}",
                                from < replicas ? "up" : "down", (*rs)->metadata().name(), from,
                                replicas));
  }
  return resize;
}

bool DeploymentController::IsScalingEvent(api::Deployment& d, std::vector<RSPtr>& owned) {
  auto sets = GetSets(d, owned, false);
  if (!sets.ok()) return false;
  for (const auto& rs : Active(sets->All())) {
    auto desired = DesiredReplicasAnnotation(*rs);
    if (desired && *desired != d.spec().replicas()) return true;
  }
  return false;
}

absl::Status DeploymentController::ScaleOnly(api::Deployment& d, std::vector<RSPtr>& owned) {
  MKUBE_ASSIGN_OR_RETURN(auto sets, GetSets(d, owned, false));
  MKUBE_RETURN_IF_ERROR(Scale(d, sets));
  if (d.spec().paused()) {
    MKUBE_RETURN_IF_ERROR(Cleanup(d, sets.old));
  }
  return SyncStatus(d, sets);
}

absl::Status DeploymentController::Scale(const api::Deployment& d, Sets& sets) {
  const int32_t replicas = d.spec().replicas();
  // One active ReplicaSet (or none: the newest) takes the whole change.
  std::vector<RSPtr*> active;
  for (auto& rs : sets.old) {
    if (rs->spec().replicas() > 0) active.push_back(&rs);
  }
  if (sets.new_rs && sets.new_rs->spec().replicas() > 0) active.push_back(&sets.new_rs);
  RSPtr* only = nullptr;
  if (active.size() == 1) {
    only = active[0];
  } else if (active.empty()) {
    if (sets.new_rs) {
      only = &sets.new_rs;
    } else if (!sets.old.empty()) {
      only = &*std::max_element(sets.old.begin(), sets.old.end(), CreatedBefore);
    }
  }
  if (only) {
    if ((*only)->spec().replicas() == replicas) return absl::OkStatus();
    return ScaleReplicaSet(d, only, replicas).status();
  }
  if (IsSaturated(d, sets.new_rs.get())) {
    for (auto& rs : sets.old) {
      if (rs->spec().replicas() == 0) continue;
      if (auto st = ScaleReplicaSet(d, &rs, 0); !st.ok()) return st.status();
    }
    return absl::OkStatus();
  }
  if (d.spec().strategy().type() != "RollingUpdate") return absl::OkStatus();
  // Proportional scaling: each active ReplicaSet gets its share of what is added or removed,
  // the rest going to the biggest (the newest on growth, the oldest on shrinking).
  int32_t total = 0;
  for (auto* rs : active) total += (*rs)->spec().replicas();
  const int32_t allowed = replicas > 0 ? replicas + MaxSurge(d) : 0;
  const int32_t to_add = allowed - total;
  std::sort(active.begin(), active.end(), [to_add](RSPtr* a, RSPtr* b) {
    if ((*a)->spec().replicas() != (*b)->spec().replicas()) {
      return (*a)->spec().replicas() > (*b)->spec().replicas();
    }
    return to_add > 0 ? CreatedBefore(*b, *a) : CreatedBefore(*a, *b);
  });
  std::map<RSPtr*, int32_t> size;
  int32_t added = 0;
  if (to_add != 0) {
    for (auto* rs : active) {
      const int32_t share = Proportion(**rs, d, to_add, added);
      size[rs] = (*rs)->spec().replicas() + share;
      added += share;
    }
  }
  for (size_t i = 0; i < active.size(); ++i) {
    RSPtr* rs = active[i];
    int32_t n = size.contains(rs) ? size[rs] : (*rs)->spec().replicas();
    if (i == 0 && to_add != added) n = std::max(0, n + to_add - added);
    if (auto st = ScaleReplicaSet(d, rs, n); !st.ok()) return st.status();
  }
  return absl::OkStatus();
}

absl::Status DeploymentController::RolloutRolling(api::Deployment& d,
                                                  std::vector<RSPtr>& owned) {
  MKUBE_ASSIGN_OR_RETURN(auto sets, GetSets(d, owned, true));
  MKUBE_ASSIGN_OR_RETURN(auto up, ReconcileNew(d, sets));
  if (up) return SyncRolloutStatus(d, sets);
  MKUBE_ASSIGN_OR_RETURN(auto down, ReconcileOld(d, sets));
  if (down) return SyncRolloutStatus(d, sets);
  if (Complete(d, d.status())) {
    MKUBE_RETURN_IF_ERROR(Cleanup(d, sets.old));
  }
  return SyncRolloutStatus(d, sets);
}

absl::StatusOr<bool> DeploymentController::ReconcileNew(const api::Deployment& d, Sets& sets) {
  const int32_t replicas = d.spec().replicas();
  const int32_t current = sets.new_rs->spec().replicas();
  if (current == replicas) return false;
  if (current > replicas) return ScaleReplicaSet(d, &sets.new_rs, replicas);
  return ScaleReplicaSet(d, &sets.new_rs, NewReplicaSetReplicas(d, sets.All(), *sets.new_rs));
}

absl::StatusOr<bool> DeploymentController::ReconcileOld(const api::Deployment& d, Sets& sets) {
  std::vector<RSPtr*> old;
  for (auto& rs : sets.old) {
    if (rs->spec().replicas() > 0) old.push_back(&rs);
  }
  if (old.empty()) return false;
  std::sort(old.begin(), old.end(), [](RSPtr* a, RSPtr* b) { return CreatedBefore(*a, *b); });
  const int32_t min_available = d.spec().replicas() - MaxUnavailable(d);
  const int32_t new_unavailable =
      sets.new_rs->spec().replicas() - sets.new_rs->status().available_replicas();
  int32_t room = SpecReplicas(sets.All()) - min_available - new_unavailable;
  if (room <= 0) return false;
  bool scaled = false;
  // First the old pods that are not available anyway: removing them costs nothing.
  int32_t cleaned = 0;
  for (auto* rs : old) {
    if (cleaned >= room) break;
    const int32_t unhealthy = (*rs)->spec().replicas() - (*rs)->status().available_replicas();
    if ((*rs)->spec().replicas() == 0 || unhealthy <= 0) continue;
    const int32_t n = std::min(room - cleaned, unhealthy);
    MKUBE_RETURN_IF_ERROR(ScaleReplicaSet(d, rs, (*rs)->spec().replicas() - n).status());
    cleaned += n;
    scaled = true;
  }
  // Then available ones, as far as availability above minAvailable allows.
  const int32_t available = AvailableReplicas(sets.All());
  if (available > min_available) {
    const int32_t budget = available - min_available;
    int32_t done = 0;
    for (auto* rs : old) {
      if (done >= budget) break;
      if ((*rs)->spec().replicas() == 0) continue;
      const int32_t n = std::min((*rs)->spec().replicas(), budget - done);
      MKUBE_RETURN_IF_ERROR(ScaleReplicaSet(d, rs, (*rs)->spec().replicas() - n).status());
      done += n;
      scaled = true;
    }
  }
  return scaled;
}

bool DeploymentController::OldPodsRunning(const Sets& sets) const {
  if (StatusReplicas(sets.old) > 0) return true;
  const std::string new_uid = sets.new_rs ? sets.new_rs->metadata().uid() : "";
  std::set<std::string> old_uids;
  for (const auto& rs : sets.old) old_uids.insert(rs->metadata().uid());
  if (old_uids.empty()) return false;
  const std::string& ns = sets.old.front()->metadata().namespace_();
  for (const auto& pod : pods_->ByIndex(kByNamespace, ns)) {
    const api::OwnerReference* ref = ControllerOf(pod->metadata());
    if (!ref || !old_uids.contains(ref->uid()) || ref->uid() == new_uid) continue;
    const std::string& phase = pod->status().phase();
    if (phase != "Failed" && phase != "Succeeded") return true;
  }
  return false;
}

absl::Status DeploymentController::RolloutRecreate(api::Deployment& d,
                                                   std::vector<RSPtr>& owned) {
  auto sets = GetSets(d, owned, false);
  if (!sets.ok()) return sets.status();
  bool scaled = false;
  for (auto& rs : sets->old) {
    if (rs->spec().replicas() == 0) continue;
    MKUBE_ASSIGN_OR_RETURN(const bool changed, ScaleReplicaSet(d, &rs, 0));
    scaled |= changed;
  }
  if (scaled || OldPodsRunning(*sets)) return SyncRolloutStatus(d, *sets);
  if (!sets->new_rs) {
    sets = GetSets(d, owned, true);
    if (!sets.ok()) return sets.status();
  }
  if (auto st = ScaleReplicaSet(d, &sets->new_rs, d.spec().replicas()); !st.ok()) {
    return st.status();
  }
  if (Complete(d, d.status())) {
    MKUBE_RETURN_IF_ERROR(Cleanup(d, sets->old));
  }
  return SyncRolloutStatus(d, *sets);
}

}  // namespace mkube::controller::deployment
