#include "controller/replicaset/replicaset.h"

#include <set>

#include "api/object.h"
#include "base/log.h"
#include "base/status.h"
#include "controller/internal/claim.h"
#include "controller/internal/indexes.h"
#include "controller/internal/owner.h"
#include "fmt/format.h"

namespace mkube::controller {

template <typename T>
ReplicaSetController<T>::ReplicaSetController(client::ApiClient* client, client::Informer<T>* sets,
                                              client::Informer<api::Pod>* pods,
                                              client::EventRecorder* events, client::Clock* clock,
                                              Options options)
    : Controller(SetKind<T>::kController, clock),
      client_(client),
      sets_(sets),
      pods_(pods),
      options_(options),
      pod_control_(client, events),
      expectations_(clock) {
  IndexByNamespace(sets_);
  IndexByController(pods_);
  IndexOrphans(pods_);
  sets_->AddHandlers({
      .on_add = [this](const SetPtr& s) { Enqueue(*s); },
      .on_update = [this](const SetPtr&, const SetPtr& s) { Enqueue(*s); },
      .on_delete =
          [this](const SetPtr& s) {
            expectations_.Delete(client::KeyOf(*s));
            Enqueue(*s);
          },
  });
  pods_->AddHandlers({
      .on_add = [this](const PodPtr& p) { AddPod(p); },
      .on_update = [this](const PodPtr& o, const PodPtr& p) { UpdatePod(o, p); },
      .on_delete = [this](const PodPtr& p) { DeletePod(p); },
  });
}

template <typename T>
std::vector<typename ReplicaSetController<T>::SetPtr> ReplicaSetController<T>::SetsSelecting(
    const api::Pod& pod) const {
  std::vector<SetPtr> out;
  for (const auto& set : sets_->ByIndex(kByNamespace, pod.metadata().namespace_())) {
    auto selector = SetKind<T>::SelectorOf(*set);
    if (selector.ok() && !selector->empty() && selector->Matches(pod.metadata().labels())) {
      out.push_back(set);
    }
  }
  return out;
}

template <typename T>
void ReplicaSetController<T>::AddPod(const PodPtr& pod) {
  if (!pod->metadata().deletion_timestamp().empty()) {
    DeletePod(pod);  // seen first while being deleted (after a relist)
    return;
  }
  if (const api::OwnerReference* ref = ControllerOf(pod->metadata())) {
    if (SetPtr set =
            ResolveControllerRef(*sets_, pod->metadata().namespace_(), ref, SetKind<T>::kKind)) {
      expectations_.CreationObserved(client::KeyOf(*set));
      Enqueue(*set);
    }
    return;
  }
  for (const auto& set : SetsSelecting(*pod)) Enqueue(*set);
}

template <typename T>
void ReplicaSetController<T>::UpdatePod(const PodPtr& old_pod, const PodPtr& pod) {
  if (old_pod->metadata().resource_version() == pod->metadata().resource_version()) return;
  const bool labels_changed = !api::SameMap(old_pod->metadata().labels(), pod->metadata().labels());
  if (!pod->metadata().deletion_timestamp().empty()) {
    // Deleted with a grace period: the set may replace it now, as Kubernetes does.
    DeletePod(pod);
    if (labels_changed) DeletePod(old_pod);
    return;
  }
  const api::OwnerReference* old_ref = ControllerOf(old_pod->metadata());
  const api::OwnerReference* ref = ControllerOf(pod->metadata());
  const bool ref_changed = (old_ref == nullptr) != (ref == nullptr) ||
                           (old_ref && ref && old_ref->uid() != ref->uid());
  if (ref_changed && old_ref) {
    if (SetPtr old_set = ResolveControllerRef(*sets_, old_pod->metadata().namespace_(), old_ref,
                                              SetKind<T>::kKind)) {
      Enqueue(*old_set);
    }
  }
  if (ref) {
    SetPtr set = ResolveControllerRef(*sets_, pod->metadata().namespace_(), ref, SetKind<T>::kKind);
    if (!set) return;
    Enqueue(*set);
    // Available only minReadySeconds after it became ready: look again then.
    const int32_t min_ready = set->spec().min_ready_seconds();
    if (min_ready > 0 && !IsReady(*old_pod) && IsReady(*pod)) {
      EnqueueAfter(*set, absl::Seconds(min_ready) + absl::Seconds(1));
    }
    return;
  }
  if (labels_changed || ref_changed) {
    for (const auto& set : SetsSelecting(*pod)) Enqueue(*set);
  }
}

template <typename T>
void ReplicaSetController<T>::DeletePod(const PodPtr& pod) {
  SetPtr set = ResolveControllerRef(*sets_, pod->metadata().namespace_(),
                                    ControllerOf(pod->metadata()), SetKind<T>::kKind);
  if (!set) return;
  const std::string key = client::KeyOf(*set);
  expectations_.DeletionObserved(key, client::KeyOf(*pod));
  Enqueue(*set);
}

template <typename T>
absl::Status ReplicaSetController<T>::Sync(const std::string& key) {
  SetPtr set = sets_->Get(key);
  if (!set) {
    expectations_.Delete(key);
    return absl::OkStatus();
  }
  auto selector = SetKind<T>::SelectorOf(*set);
  if (!selector.ok() || selector->empty()) {
    // Validation refuses both; nothing to do for an object that got past it.
    log::Logger(SetKind<T>::kController).warn("{}: invalid selector, skipped", key);
    return absl::OkStatus();
  }
  const bool needs_sync =
      expectations_.Satisfied(key) && set->metadata().deletion_timestamp().empty();
  std::vector<PodPtr> active;
  for (auto& pod : OwnedOrOrphaned(*pods_, set->metadata())) {
    if (IsActive(*pod)) active.push_back(std::move(pod));
  }
  const api::OwnerReference ref = ControllerRef(*set, SetKind<T>::kApiVersion, SetKind<T>::kKind);
  auto can_adopt = [this, &set]() -> absl::Status {
    MKUBE_ASSIGN_OR_RETURN(auto fresh,
                           client_->Get<T>(SetKind<T>::kResource, set->metadata().namespace_(),
                                           set->metadata().name()));
    if (fresh.metadata().uid() != set->metadata().uid()) {
      return absl::AbortedError(fmt::format("original {} {} is gone: got uid {}, wanted {}",
                                            SetKind<T>::kKind, client::KeyOf(*set),
                                            fresh.metadata().uid(), set->metadata().uid()));
    }
    if (!fresh.metadata().deletion_timestamp().empty()) {
      return absl::AbortedError(fmt::format("{} {} has just been deleted at {}", SetKind<T>::kKind,
                                            client::KeyOf(*set),
                                            fresh.metadata().deletion_timestamp()));
    }
    return absl::OkStatus();
  };
  absl::Status error;
  std::vector<PodPtr> mine =
      Claim<api::Pod>(client_, "pods", *set, ref, *selector, active, can_adopt, &error);
  if (needs_sync && error.ok()) error = Manage(*set, key, mine);
  api::ReplicaSetStatus status = StatusOf(*set, mine, error);
  if (auto st = WriteStatus(*set, status); !st.ok() && error.ok()) error = st;
  const int32_t min_ready = set->spec().min_ready_seconds();
  if (error.ok() && min_ready > 0 && status.ready_replicas() == set->spec().replicas() &&
      status.available_replicas() != set->spec().replicas()) {
    EnqueueAfter(*set, absl::Seconds(min_ready));
  }
  return error;
}

template <typename T>
absl::Status ReplicaSetController<T>::Manage(const T& set, const std::string& key,
                                             const std::vector<PodPtr>& pods) {
  const int diff = static_cast<int>(pods.size()) - set.spec().replicas();
  if (diff < 0) {
    const int n = std::min(-diff, options_.burst_replicas);
    expectations_.ExpectCreations(key, n);
    const api::Pod pod =
        PodFromTemplate(set.spec().template_(), set.metadata().namespace_(), set.metadata().name(),
                        ControllerRef(set, SetKind<T>::kApiVersion, SetKind<T>::kKind));
    absl::Status error;
    const int made = SlowStartBatch(
        n, [&](int, auto done) { pod_control_.Create(set, pod, std::move(done)); }, &error);
    // The pods never made will never be observed.
    for (int i = made; i < n; ++i) expectations_.CreationObserved(key);
    return error;
  }
  if (diff > 0) {
    const int n = std::min(diff, options_.burst_replicas);
    std::vector<PodPtr> victims = pods;
    SortForDeletion(&victims);
    victims.resize(n);
    std::set<std::string> keys;
    for (const auto& p : victims) keys.insert(client::KeyOf(*p));
    expectations_.ExpectDeletions(key, keys);
    std::mutex mu;
    absl::Status error;
    ParallelFor(n, 16, [&](int i) {
      absl::Status st = pod_control_.Delete(set, *victims[i]);
      if (st.ok()) return;
      expectations_.DeletionObserved(key, client::KeyOf(*victims[i]));
      std::lock_guard<std::mutex> lock(mu);
      if (error.ok()) error = st;
    });
    return error;
  }
  return absl::OkStatus();
}

template <typename T>
api::ReplicaSetStatus ReplicaSetController<T>::StatusOf(const T& set,
                                                        const std::vector<PodPtr>& pods,
                                                        const absl::Status& manage_error) const {
  api::ReplicaSetStatus status = set.status();
  const absl::Time now = clock_->Now();
  int fully_labeled = 0, ready = 0, available = 0;
  const int32_t min_ready = set.spec().min_ready_seconds();
  const auto& template_labels = set.spec().template_().metadata().labels();
  for (const auto& pod : pods) {
    bool all = true;
    for (const auto& [k, v] : template_labels) {
      auto it = pod->metadata().labels().find(k);
      if (it == pod->metadata().labels().end() || it->second != v) all = false;
    }
    if (all) ++fully_labeled;
    if (!IsReady(*pod)) continue;
    ++ready;
    if (min_ready <= 0 || IsAvailable(*pod, min_ready, now)) ++available;
  }
  status.set_replicas(static_cast<int32_t>(pods.size()));
  status.set_fully_labeled_replicas(fully_labeled);
  status.set_ready_replicas(ready);
  status.set_available_replicas(available);
  status.set_observed_generation(set.metadata().generation());
  // ReplicaFailure: set while creating or deleting fails, cleared once it works again.
  auto* conditions = status.mutable_conditions();
  int failure = -1;
  for (int i = 0; i < conditions->size(); ++i) {
    if (conditions->Get(i).type() == "ReplicaFailure") failure = i;
  }
  if (!manage_error.ok()) {
    const int diff = static_cast<int>(pods.size()) - set.spec().replicas();
    api::Condition* c = failure >= 0 ? conditions->Mutable(failure) : conditions->Add();
    const std::string message(manage_error.message());
    if (c->message() != message) c->set_last_transition_time(api::Rfc3339(clock_->Now()));
    c->set_type("ReplicaFailure");
    c->set_status("True");
    c->set_reason(diff < 0 ? "FailedCreate" : "FailedDelete");
    c->set_message(message);
  } else if (failure >= 0) {
    conditions->DeleteSubrange(failure, 1);
  }
  return status;
}

template <typename T>
absl::Status ReplicaSetController<T>::WriteStatus(const T& set,
                                                  const api::ReplicaSetStatus& status) {
  if (api::Equal(set.status(), status)) return absl::OkStatus();
  T updated = set;
  *updated.mutable_status() = status;
  auto r = client_->Update<T>(SetKind<T>::kResource, set.metadata().namespace_(), updated, "status");
  if (r.ok() || r.status().code() != absl::StatusCode::kAborted) return r.status();
  // Changed meanwhile (its spec, or another writer): once more on the current object.
  MKUBE_ASSIGN_OR_RETURN(
      auto fresh,
      client_->Get<T>(SetKind<T>::kResource, set.metadata().namespace_(), set.metadata().name()));
  *fresh.mutable_status() = status;
  fresh.mutable_status()->set_observed_generation(set.metadata().generation());
  return client_->Update<T>(SetKind<T>::kResource, set.metadata().namespace_(), fresh, "status")
      .status();
}

template class ReplicaSetController<api::ReplicaSet>;
template class ReplicaSetController<api::ReplicationController>;

}  // namespace mkube::controller
