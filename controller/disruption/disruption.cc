#include "controller/disruption/disruption.h"

#include <map>

#include "api/labels.h"
#include "api/object.h"
#include "controller/internal/indexes.h"
#include "controller/internal/int_or_percent.h"
#include "controller/internal/owner.h"
#include "fmt/format.h"

namespace mkube::controller::disruption {

DisruptionController::DisruptionController(
    client::ApiClient* client, client::Informer<api::PodDisruptionBudget>* budgets,
    client::Informer<api::Pod>* pods, client::Informer<api::ReplicaSet>* replica_sets,
    client::Informer<api::ReplicationController>* replication_controllers,
    client::Informer<api::Deployment>* deployments, client::Clock* clock)
    : Controller("disruption-controller", clock),
      client_(client),
      budgets_(budgets),
      pods_(pods),
      replica_sets_(replica_sets),
      replication_controllers_(replication_controllers),
      deployments_(deployments) {
  IndexByNamespace(budgets_);
  IndexByNamespace(pods_);
  using BudgetPtr = std::shared_ptr<const api::PodDisruptionBudget>;
  budgets_->AddHandlers({
      .on_add = [this](const BudgetPtr& b) { Enqueue(*b); },
      .on_update = [this](const BudgetPtr&, const BudgetPtr& b) { Enqueue(*b); },
  });
  pods_->AddHandlers({
      .on_add = [this](const PodPtr& p) { EnqueueBudgetsOf(*p); },
      .on_update =
          [this](const PodPtr& old_pod, const PodPtr& p) {
            EnqueueBudgetsOf(*p);
            if (!api::SameMap(old_pod->metadata().labels(), p->metadata().labels())) {
              EnqueueBudgetsOf(*old_pod);
            }
          },
      .on_delete = [this](const PodPtr& p) { EnqueueBudgetsOf(*p); },
  });
}

void DisruptionController::EnqueueBudgetsOf(const api::Pod& pod) {
  for (const auto& b : budgets_->ByIndex(kByNamespace, pod.metadata().namespace_())) {
    auto sel = api::Selector::FromLabelSelector(b->spec().selector());
    if (sel.ok() && !sel->empty() && sel->Matches(pod.metadata().labels())) Enqueue(*b);
  }
}

absl::StatusOr<int32_t> DisruptionController::ControllersScale(
    const std::vector<PodPtr>& pods) const {
  std::map<std::string, int32_t> scale;  // by controller uid
  for (const auto& pod : pods) {
    const std::string& ns = pod->metadata().namespace_();
    const api::OwnerReference* ref = ControllerOf(pod->metadata());
    if (!ref) {
      return absl::FailedPreconditionError(
          fmt::format("found no controllers for pod \"{}\"", pod->metadata().name()));
    }
    if (ref->kind() == "ReplicaSet") {
      auto rs = ResolveControllerRef(*replica_sets_, ns, ref, "ReplicaSet");
      if (!rs) continue;
      // A Deployment's ReplicaSet: the Deployment's scale counts.
      if (auto d =
              ResolveControllerRef(*deployments_, ns, ControllerOf(rs->metadata()), "Deployment")) {
        scale[d->metadata().uid()] = d->spec().replicas();
        continue;
      }
      scale[ref->uid()] = rs->spec().replicas();
    } else if (ref->kind() == "ReplicationController") {
      auto rc = ResolveControllerRef(*replication_controllers_, ns, ref, "ReplicationController");
      if (rc) scale[ref->uid()] = rc->spec().replicas();
    } else {
      return absl::FailedPreconditionError(fmt::format(
          "the scale of a {} is not known, for pod \"{}\"", ref->kind(), pod->metadata().name()));
    }
  }
  int32_t total = 0;
  for (const auto& [uid, n] : scale) total += n;
  return total;
}

absl::Status DisruptionController::Sync(const std::string& key) {
  auto pdb = budgets_->Get(key);
  if (!pdb) return absl::OkStatus();
  const absl::Time now = clock_->Now();
  const auto& spec = pdb->spec();
  std::vector<PodPtr> pods;
  if (auto sel = api::Selector::FromLabelSelector(spec.selector()); sel.ok() && !sel->empty()) {
    for (auto& p : pods_->ByIndex(kByNamespace, pdb->metadata().namespace_())) {
      if (sel->Matches(p->metadata().labels())) pods.push_back(std::move(p));
    }
  }
  api::PodDisruptionBudgetStatus status = pdb->status();
  // Evicted pods are forgotten once they are seen going, or after a while.
  auto* disrupted = status.mutable_disrupted_pods();
  for (auto it = disrupted->begin(); it != disrupted->end();) {
    auto when = api::ParseRfc3339(it->second);
    auto pod = pods_->Get(pdb->metadata().namespace_() + "/" + it->first);
    if (!pod || !pod->metadata().deletion_timestamp().empty() || !when ||
        *when + kDisruptedTimeout < now) {
      it = disrupted->erase(it);
    } else {
      ++it;
    }
  }
  int32_t expected = static_cast<int32_t>(pods.size()), desired = 0;
  absl::Status scale_error;
  const bool by_scale = spec.has_max_unavailable() ||
                        (spec.has_min_available() && spec.min_available().has_string_value());
  if (by_scale) {
    auto scale = ControllersScale(pods);
    if (scale.ok()) {
      expected = *scale;
    } else {
      scale_error = scale.status();
    }
    desired = spec.has_max_unavailable()
                  ? std::max(0, expected - Scaled(spec.max_unavailable(), expected,
                                                  /*round_up=*/true))
                  : Scaled(spec.min_available(), expected, /*round_up=*/true);
  } else if (spec.has_min_available()) {
    desired = spec.min_available().int_value();
  }
  int32_t healthy = 0;
  for (const auto& p : pods) {
    if (IsActive(*p) && IsReady(*p) && !disrupted->contains(p->metadata().name())) ++healthy;
  }
  const int32_t allowed = scale_error.ok() ? std::max(0, healthy - desired) : 0;
  status.set_observed_generation(pdb->metadata().generation());
  status.set_expected_pods(expected);
  status.set_desired_healthy(desired);
  status.set_current_healthy(healthy);
  status.set_disruptions_allowed(allowed);
  api::Condition c;
  c.set_type("DisruptionAllowed");
  c.set_status(allowed > 0 ? "True" : "False");
  c.set_reason(!scale_error.ok() ? "SyncFailed"
               : allowed > 0     ? "SufficientPods"
                                 : "InsufficientPods");
  c.set_message(scale_error.ok() ? "" : std::string(scale_error.message()));
  c.set_observed_generation(pdb->metadata().generation());
  const api::Condition* old = nullptr;
  for (const auto& oc : pdb->status().conditions()) {
    if (oc.type() == "DisruptionAllowed") old = &oc;
  }
  c.set_last_transition_time(old && old->status() == c.status() ? old->last_transition_time()
                                                                 : api::Rfc3339(now));
  status.clear_conditions();
  *status.add_conditions() = c;
  if (api::Equal(status, pdb->status())) return absl::OkStatus();
  api::PodDisruptionBudget updated = *pdb;
  *updated.mutable_status() = status;
  auto r = client_->Update<api::PodDisruptionBudget>(
      "poddisruptionbudgets", pdb->metadata().namespace_(), updated, "status");
  if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
  // Remembered evictions expire: look again then.
  if (!disrupted->empty()) EnqueueAfter(*pdb, kDisruptedTimeout);
  return absl::OkStatus();
}

}  // namespace mkube::controller::disruption
