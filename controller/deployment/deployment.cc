#include "controller/deployment/deployment.h"

#include <algorithm>

#include "api/labels.h"
#include "api/object.h"
#include "base/log.h"
#include "base/status.h"
#include "controller/internal/claim.h"
#include "controller/internal/indexes.h"
#include "controller/internal/owner.h"
#include "controller/internal/template_hash.h"
#include "fmt/format.h"

namespace mkube::controller::deployment {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("deployment-controller");
  return logger;
}

// Deployment annotations that are the controller's or kubectl's own, not copied to the
// ReplicaSets.
bool SkippedAnnotation(const std::string& key) {
  return key == kRevision || key == kRevisionHistory || key == kDesiredReplicas ||
         key == kMaxReplicas || key == "kubectl.kubernetes.io/last-applied-configuration" ||
         key == "deprecated.deployment.rollback.to";
}

// Copies the deployment's own annotations onto the ReplicaSet; true when any changed.
bool CopyAnnotations(const api::Deployment& d, api::ReplicaSet* rs) {
  bool changed = false;
  auto* to = rs->mutable_metadata()->mutable_annotations();
  for (const auto& [k, v] : d.metadata().annotations()) {
    if (SkippedAnnotation(k)) continue;
    auto it = to->find(k);
    if (it != to->end() && it->second == v) continue;
    (*to)[k] = v;
    changed = true;
  }
  return changed;
}

// Moves the ReplicaSet to `revision` if it is behind, remembering the old one in the history
// annotation; true when it changed.
bool SetRevision(api::ReplicaSet* rs, int64_t revision, bool existing) {
  const int64_t old = Revision(*rs);
  if (old >= revision) return false;
  auto* ann = rs->mutable_metadata()->mutable_annotations();
  if (existing && old > 0) {
    auto it = ann->find(kRevisionHistory);
    (*ann)[kRevisionHistory] = it == ann->end() || it->second.empty()
                                   ? std::to_string(old)
                                   : it->second + "," + std::to_string(old);
  }
  (*ann)[kRevision] = std::to_string(revision);
  return true;
}

}  // namespace

std::vector<RSPtr> DeploymentController::Sets::All() const {
  std::vector<RSPtr> all = old;
  if (new_rs) all.push_back(new_rs);
  return all;
}

DeploymentController::DeploymentController(client::ApiClient* client,
                                           client::Informer<api::Deployment>* deployments,
                                           client::Informer<api::ReplicaSet>* replica_sets,
                                           client::Informer<api::Pod>* pods,
                                           client::EventRecorder* events, client::Clock* clock)
    : Controller("deployment-controller", clock),
      client_(client),
      deployments_(deployments),
      replica_sets_(replica_sets),
      pods_(pods),
      events_(events) {
  IndexByNamespace(deployments_);
  IndexByNamespace(replica_sets_);
  IndexByNamespace(pods_);
  deployments_->AddHandlers({
      .on_add = [this](const DeploymentPtr& d) { Enqueue(*d); },
      .on_update = [this](const DeploymentPtr&, const DeploymentPtr& d) { Enqueue(*d); },
      .on_delete = [this](const DeploymentPtr& d) { Enqueue(*d); },
  });
  replica_sets_->AddHandlers({
      .on_add = [this](const RSPtr& rs) { OnReplicaSet(nullptr, rs); },
      .on_update = [this](const RSPtr& old_rs, const RSPtr& rs) { OnReplicaSet(old_rs, rs); },
      .on_delete =
          [this](const RSPtr& rs) {
            if (auto d = ResolveControllerRef(*deployments_, rs->metadata().namespace_(),
                                              ControllerOf(rs->metadata()), "Deployment")) {
              Enqueue(*d);
            }
          },
  });
  pods_->AddHandlers({.on_delete = [this](const PodPtr& p) { OnPodDeleted(p); }});
}

std::vector<DeploymentController::DeploymentPtr> DeploymentController::Selecting(
    const api::ReplicaSet& rs) const {
  std::vector<DeploymentPtr> out;
  for (const auto& d : deployments_->ByIndex(kByNamespace, rs.metadata().namespace_())) {
    auto selector = api::Selector::FromLabelSelector(d->spec().selector());
    if (selector.ok() && !selector->empty() && selector->Matches(rs.metadata().labels())) {
      out.push_back(d);
    }
  }
  return out;
}

void DeploymentController::OnReplicaSet(const RSPtr& old_rs, const RSPtr& rs) {
  if (old_rs && old_rs->metadata().resource_version() == rs->metadata().resource_version()) return;
  const std::string& ns = rs->metadata().namespace_();
  const api::OwnerReference* ref = ControllerOf(rs->metadata());
  if (old_rs) {
    const api::OwnerReference* old_ref = ControllerOf(old_rs->metadata());
    if (old_ref && (!ref || old_ref->uid() != ref->uid())) {
      if (auto d = ResolveControllerRef(*deployments_, ns, old_ref, "Deployment")) Enqueue(*d);
    }
  }
  if (ref) {
    if (auto d = ResolveControllerRef(*deployments_, ns, ref, "Deployment")) Enqueue(*d);
    return;
  }
  // An orphan: the deployments that may adopt it.
  for (const auto& d : Selecting(*rs)) Enqueue(*d);
}

void DeploymentController::OnPodDeleted(const PodPtr& pod) {
  // Only Recreate waits for pods: its new ReplicaSet starts once the old pods are all gone.
  const api::OwnerReference* ref = ControllerOf(pod->metadata());
  if (!ref || ref->kind() != "ReplicaSet") return;
  RSPtr rs = replica_sets_->Get(pod->metadata().namespace_() + "/" + ref->name());
  if (!rs) return;
  DeploymentPtr d = ResolveControllerRef(*deployments_, rs->metadata().namespace_(),
                                         ControllerOf(rs->metadata()), "Deployment");
  if (d && d->spec().strategy().type() == "Recreate") Enqueue(*d);
}

absl::Status DeploymentController::Sync(const std::string& key) {
  DeploymentPtr cached = deployments_->Get(key);
  if (!cached) return absl::OkStatus();  // its ReplicaSets go by garbage collection
  api::Deployment d = *cached;
  auto selector = api::Selector::FromLabelSelector(d.spec().selector());
  if (!selector.ok() || selector->empty()) {
    events_->Record(d, "Warning", "SelectingAll",
                    "This deployment is selecting all pods. A non-empty selector is required.");
    if (d.status().observed_generation() < d.metadata().generation()) {
      api::DeploymentStatus status = d.status();
      status.set_observed_generation(d.metadata().generation());
      return WriteStatus(d, status);
    }
    return absl::OkStatus();
  }
  MKUBE_ASSIGN_OR_RETURN(auto owned, ClaimReplicaSets(d));
  if (!d.metadata().deletion_timestamp().empty()) {
    MKUBE_ASSIGN_OR_RETURN(auto sets, GetSets(d, owned, false));
    return SyncStatus(d, sets);
  }
  MKUBE_RETURN_IF_ERROR(CheckPaused(d));
  if (d.spec().paused() || IsScalingEvent(d, owned)) return ScaleOnly(d, owned);
  if (d.spec().strategy().type() == "Recreate") return RolloutRecreate(d, owned);
  return RolloutRolling(d, owned);
}

absl::StatusOr<std::vector<RSPtr>> DeploymentController::ClaimReplicaSets(
    const api::Deployment& d) {
  MKUBE_ASSIGN_OR_RETURN(auto selector, api::Selector::FromLabelSelector(d.spec().selector()));
  auto can_adopt = [this, &d]() -> absl::Status {
    MKUBE_ASSIGN_OR_RETURN(auto fresh,
                           client_->Get<api::Deployment>("deployments", d.metadata().namespace_(),
                                                         d.metadata().name()));
    if (fresh.metadata().uid() != d.metadata().uid()) {
      return absl::AbortedError(fmt::format("original Deployment {} is gone: got uid {}, wanted {}",
                                            client::KeyOf(d), fresh.metadata().uid(),
                                            d.metadata().uid()));
    }
    if (!fresh.metadata().deletion_timestamp().empty()) {
      return absl::AbortedError(fmt::format("Deployment {} has just been deleted at {}",
                                            client::KeyOf(d),
                                            fresh.metadata().deletion_timestamp()));
    }
    return absl::OkStatus();
  };
  absl::Status error;
  auto owned = Claim<api::ReplicaSet>(
      client_, "replicasets", d, ControllerRef(d, "apps/v1", "Deployment"), selector,
      replica_sets_->ByIndex(kByNamespace, d.metadata().namespace_()), can_adopt, &error);
  if (!error.ok()) return error;
  return owned;
}

absl::StatusOr<DeploymentController::Sets> DeploymentController::GetSets(
    api::Deployment& d, std::vector<RSPtr>& owned, bool create) {
  Sets sets;
  RSPtr found = FindNewReplicaSet(d, owned);
  for (const auto& rs : owned) {
    if (rs != found) sets.old.push_back(rs);
  }
  const int64_t revision = MaxRevision(sets.old) + 1;
  if (found) {
    MKUBE_ASSIGN_OR_RETURN(auto synced, SyncNewReplicaSet(d, found, revision));
    sets.new_rs = synced;
    std::replace(owned.begin(), owned.end(), found, sets.new_rs);
  } else if (create) {
    MKUBE_ASSIGN_OR_RETURN(auto made, CreateNewReplicaSet(d, sets, revision));
    sets.new_rs = made;
    owned.push_back(sets.new_rs);
  }
  return sets;
}

absl::StatusOr<RSPtr> DeploymentController::SyncNewReplicaSet(api::Deployment& d, RSPtr rs,
                                                               int64_t revision) {
  api::ReplicaSet copy = *rs;
  bool changed = CopyAnnotations(d, &copy);
  changed |= SetRevision(&copy, revision, true);
  if (copy.spec().min_ready_seconds() != d.spec().min_ready_seconds()) {
    copy.mutable_spec()->set_min_ready_seconds(d.spec().min_ready_seconds());
    changed = true;
  }
  if (changed) {
    MKUBE_ASSIGN_OR_RETURN(auto updated, client_->Update<api::ReplicaSet>(
                                             "replicasets", d.metadata().namespace_(), copy));
    rs = std::make_shared<const api::ReplicaSet>(std::move(updated));
  }
  // The deployment shows the revision it runs.
  const std::string rev = std::to_string(Revision(*rs));
  auto it = d.metadata().annotations().find(kRevision);
  if (it == d.metadata().annotations().end() || it->second != rev) {
    api::Deployment annotated = d;
    (*annotated.mutable_metadata()->mutable_annotations())[kRevision] = rev;
    MKUBE_ASSIGN_OR_RETURN(auto updated, client_->Update<api::Deployment>(
                                             "deployments", d.metadata().namespace_(), annotated));
    d = std::move(updated);
  }
  if (!FindCondition(d.status(), "Progressing") && HasProgressDeadline(d)) {
    api::DeploymentStatus status = d.status();
    SetCondition(&status, NewCondition("Progressing", "True", kFoundNewRS,
                                       fmt::format("Found new replica set \"{}\"",
                                                   rs->metadata().name()),
                                       clock_->Now()));
    MKUBE_RETURN_IF_ERROR(WriteStatus(d, status));
  }
  return rs;
}

absl::StatusOr<RSPtr> DeploymentController::CreateNewReplicaSet(api::Deployment& d,
                                                                 const Sets& sets,
                                                                 int64_t revision) {
  const std::optional<int32_t> collisions =
      d.status().has_collision_count() ? std::optional<int32_t>(d.status().collision_count())
                                       : std::nullopt;
  const std::string hash = TemplateHash(d.spec().template_(), collisions);
  api::ReplicaSet rs;
  rs.set_api_version("apps/v1");
  rs.set_kind("ReplicaSet");
  auto* meta = rs.mutable_metadata();
  meta->set_name(d.metadata().name() + "-" + hash);
  meta->set_namespace_(d.metadata().namespace_());
  *meta->add_owner_references() = ControllerRef(d, "apps/v1", "Deployment");
  *rs.mutable_spec()->mutable_template_() = d.spec().template_();
  (*rs.mutable_spec()->mutable_template_()->mutable_metadata()->mutable_labels())[kPodTemplateHash] =
      hash;
  *meta->mutable_labels() = rs.spec().template_().metadata().labels();
  *rs.mutable_spec()->mutable_selector() = d.spec().selector();
  (*rs.mutable_spec()->mutable_selector()->mutable_match_labels())[kPodTemplateHash] = hash;
  rs.mutable_spec()->set_min_ready_seconds(d.spec().min_ready_seconds());
  rs.mutable_spec()->set_replicas(0);
  const int32_t replicas = NewReplicaSetReplicas(d, sets.All(), rs);
  rs.mutable_spec()->set_replicas(replicas);
  CopyAnnotations(d, &rs);
  SetRevision(&rs, revision, false);
  auto* ann = meta->mutable_annotations();
  (*ann)[kDesiredReplicas] = std::to_string(d.spec().replicas());
  (*ann)[kMaxReplicas] = std::to_string(d.spec().replicas() + MaxSurge(d));

  auto created = client_->Create<api::ReplicaSet>("replicasets", d.metadata().namespace_(), rs);
  if (!created.ok() && created.status().code() == absl::StatusCode::kAlreadyExists) {
    // Made by an earlier sync whose watch event has not arrived, or a hash collision.
    MKUBE_ASSIGN_OR_RETURN(
        auto existing,
        client_->Get<api::ReplicaSet>("replicasets", d.metadata().namespace_(), meta->name()));
    if (ControlledBy(existing.metadata(), d.metadata().uid()) &&
        EqualIgnoreHash(existing.spec().template_(), d.spec().template_())) {
      return std::make_shared<const api::ReplicaSet>(std::move(existing));
    }
    api::DeploymentStatus status = d.status();
    status.set_collision_count(collisions.value_or(0) + 1);
    MKUBE_RETURN_IF_ERROR(WriteStatus(d, status));
    Log().info("{}: hash collision with replica set {}, collision count now {}", client::KeyOf(d),
               meta->name(), status.collision_count());
    return absl::AbortedError(fmt::format("hash collision for replica set \"{}\"", meta->name()));
  }
  if (!created.ok()) {
    if (HasProgressDeadline(d)) {
      api::DeploymentStatus status = d.status();
      SetCondition(&status, NewCondition("ReplicaFailure", "True", "FailedCreate",
                                         std::string(created.status().message()), clock_->Now()));
      (void)WriteStatus(d, status);
    }
    events_->Record(d, "Warning", "FailedCreate",
                    fmt::format("Failed to create new replica set \"{}\": {}", meta->name(),
                                std::string(created.status().message())));
    return created.status();
  }
  auto made = std::make_shared<const api::ReplicaSet>(std::move(*created));
  if (replicas > 0) {
    events_->Record(d, "Normal", "ScalingReplicaSet",
                    fmt::format("Scaled up replica set {} from 0 to {}", made->metadata().name(),
                                replicas));
  }
  if (HasProgressDeadline(d)) {
    api::DeploymentStatus status = d.status();
    SetCondition(&status, NewCondition("Progressing", "True", kNewRSCreated,
                                       fmt::format("Created new replica set \"{}\"",
                                                   made->metadata().name()),
                                       clock_->Now()));
    MKUBE_RETURN_IF_ERROR(WriteStatus(d, status));
  }
  return made;
}

}  // namespace mkube::controller::deployment
