// A deployment's status: counts, the Available and Progressing conditions, history cleanup.
#include "base/status.h"

#include <algorithm>

#include "api/object.h"
#include "controller/deployment/deployment.h"
#include "fmt/format.h"

namespace mkube::controller::deployment {

api::DeploymentStatus DeploymentController::CalculateStatus(const api::Deployment& d,
                                                            const Sets& sets) const {
  const std::vector<RSPtr> all = sets.All();
  api::DeploymentStatus status = d.status();
  const int32_t available = AvailableReplicas(all);
  status.set_observed_generation(d.metadata().generation());
  status.set_replicas(StatusReplicas(all));
  status.set_updated_replicas(sets.new_rs ? sets.new_rs->status().replicas() : 0);
  status.set_ready_replicas(ReadyReplicas(all));
  status.set_available_replicas(available);
  status.set_unavailable_replicas(std::max(0, SpecReplicas(all) - available));
  const absl::Time now = clock_->Now();
  if (available >= d.spec().replicas() - MaxUnavailable(d)) {
    SetCondition(&status, NewCondition("Available", "True", "MinimumReplicasAvailable",
                                       "Deployment has minimum availability.", now));
  } else {
    SetCondition(&status, NewCondition("Available", "False", "MinimumReplicasUnavailable",
                                       "Deployment does not have minimum availability.", now));
  }
  return status;
}

absl::Status DeploymentController::SyncStatus(api::Deployment& d, const Sets& sets) {
  return WriteStatus(d, CalculateStatus(d, sets));
}

absl::Status DeploymentController::SyncRolloutStatus(api::Deployment& d, const Sets& sets) {
  api::DeploymentStatus status = CalculateStatus(d, sets);
  const absl::Time now = clock_->Now();
  const std::string rs_name = sets.new_rs ? sets.new_rs->metadata().name() : "";
  if (!HasProgressDeadline(d)) {
    RemoveCondition(&status, "Progressing");
  } else {
    const api::Condition* cur = FindCondition(status, "Progressing");
    const bool completed = status.replicas() == status.updated_replicas() && cur &&
                           cur->reason() == kNewRSAvailable;
    const bool timed_out = cur && cur->reason() == kTimedOut;
    if (!completed && !timed_out) {
      if (Complete(d, status)) {
        SetCondition(&status,
                     NewCondition("Progressing", "True", kNewRSAvailable,
                                  rs_name.empty()
                                      ? "Deployment has successfully progressed."
                                      : fmt::format("ReplicaSet \"{}\" has successfully progressed.",
                                                    rs_name),
                                  now));
      } else if (Progressing(d, status)) {
        // Progress moves the deadline: the condition is written anew, keeping when it turned True.
        api::Condition c = NewCondition(
            "Progressing", "True", kRSUpdated,
            rs_name.empty() ? "Deployment is progressing."
                            : fmt::format("ReplicaSet \"{}\" is progressing.", rs_name),
            now);
        if (cur && cur->status() == "True") c.set_last_transition_time(cur->last_transition_time());
        RemoveCondition(&status, "Progressing");
        *status.add_conditions() = std::move(c);
      } else if (TimedOut(d, status, now)) {
        SetCondition(&status,
                     NewCondition("Progressing", "False", kTimedOut,
                                  rs_name.empty()
                                      ? "Deployment has timed out progressing."
                                      : fmt::format("ReplicaSet \"{}\" has timed out progressing.",
                                                    rs_name),
                                  now));
      }
    }
  }
  // A ReplicaSet that cannot make its pods shows on the deployment.
  const api::Condition* failure = nullptr;
  for (const auto& rs : sets.All()) {
    for (const auto& c : rs->status().conditions()) {
      if (c.type() == "ReplicaFailure" && c.status() == "True") failure = &c;
    }
  }
  if (failure) {
    SetCondition(&status, NewCondition("ReplicaFailure", "True", failure->reason(),
                                       failure->message(), now));
  } else {
    RemoveCondition(&status, "ReplicaFailure");
  }
  MKUBE_RETURN_IF_ERROR(WriteStatus(d, status));
  // Look again when the deadline passes, should nothing else happen meanwhile.
  const api::Condition* cur = FindCondition(d.status(), "Progressing");
  if (HasProgressDeadline(d) && cur && cur->reason() != kNewRSAvailable &&
      cur->reason() != kTimedOut) {
    if (auto from = api::ParseRfc3339(cur->last_update_time())) {
      const absl::Duration left =
          *from + absl::Seconds(d.spec().progress_deadline_seconds()) - now;
      EnqueueAfter(d, std::max(left + absl::Seconds(1), absl::Seconds(1)));
    }
  }
  return absl::OkStatus();
}

absl::Status DeploymentController::CheckPaused(api::Deployment& d) {
  if (!HasProgressDeadline(d)) return absl::OkStatus();
  const api::Condition* cur = FindCondition(d.status(), "Progressing");
  if (cur && cur->reason() == kTimedOut) return absl::OkStatus();
  const bool paused_shown = cur && cur->reason() == kPaused;
  api::DeploymentStatus status = d.status();
  if (d.spec().paused() && !paused_shown) {
    SetCondition(&status, NewCondition("Progressing", "Unknown", kPaused, "Deployment is paused",
                                       clock_->Now()));
  } else if (!d.spec().paused() && paused_shown) {
    SetCondition(&status, NewCondition("Progressing", "Unknown", kResumed, "Deployment is resumed",
                                       clock_->Now()));
  } else {
    return absl::OkStatus();
  }
  return WriteStatus(d, status);
}

absl::Status DeploymentController::WriteStatus(api::Deployment& d,
                                               const api::DeploymentStatus& status) {
  if (api::Equal(d.status(), status)) return absl::OkStatus();
  api::Deployment copy = d;
  *copy.mutable_status() = status;
  auto updated =
      client_->Update<api::Deployment>("deployments", d.metadata().namespace_(), copy, "status");
  if (!updated.ok()) return updated.status();
  d = std::move(*updated);
  return absl::OkStatus();
}

absl::Status DeploymentController::Cleanup(const api::Deployment& d,
                                           const std::vector<RSPtr>& old) {
  if (!d.spec().has_revision_history_limit()) return absl::OkStatus();
  std::vector<RSPtr> alive;
  for (const auto& rs : old) {
    if (rs->metadata().deletion_timestamp().empty()) alive.push_back(rs);
  }
  const int excess = static_cast<int>(alive.size()) - d.spec().revision_history_limit();
  if (excess <= 0) return absl::OkStatus();
  std::sort(alive.begin(), alive.end(), [](const RSPtr& a, const RSPtr& b) {
    if (Revision(*a) != Revision(*b)) return Revision(*a) < Revision(*b);
    return a->metadata().creation_timestamp() < b->metadata().creation_timestamp();
  });
  for (int i = 0; i < excess; ++i) {
    const api::ReplicaSet& rs = *alive[i];
    // Only empty ones that the ReplicaSet controller has caught up with.
    if (rs.status().replicas() != 0 || rs.spec().replicas() != 0 ||
        rs.metadata().generation() > rs.status().observed_generation()) {
      continue;
    }
    apiserver::DeleteRequest req;
    req.set_resource("replicasets");
    req.set_namespace_(rs.metadata().namespace_());
    req.set_name(rs.metadata().name());
    req.mutable_preconditions()->set_uid(rs.metadata().uid());
    auto r = client_->Delete(req);
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
  }
  return absl::OkStatus();
}

}  // namespace mkube::controller::deployment
