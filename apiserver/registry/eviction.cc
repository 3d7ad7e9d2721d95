// pods/eviction: a delete that the pod's PodDisruptionBudget may refuse.
#include "api/labels.h"
#include "api/object.h"
#include "apiserver/registry/errors.h"
#include "apiserver/registry/registry.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"

namespace mkube::apiserver::registry {

absl::StatusOr<std::string> Registry::CreateSubresource(const api::KindInfo& kind,
                                                        const CreateRequest& req) {
  if (kind.kind != "Pod" || req.subresource() != "eviction") {
    return NoSubresource(kind, req.subresource());
  }
  return Evict(kind, req);
}

absl::StatusOr<std::string> Registry::Evict(const api::KindInfo& kind, const CreateRequest& req) {
  api::Eviction eviction;
  if (!eviction.ParseFromString(req.object())) {
    return absl::InvalidArgumentError("the request body is not a valid Eviction");
  }
  const std::string name = req.name().empty() ? eviction.metadata().name() : req.name();
  MKUBE_ASSIGN_OR_RETURN(auto cur, Current(kind, Key(kind, req.namespace_(), name), name));
  const auto& pod = static_cast<const api::Pod&>(*cur->object);
  DeleteRequest del;
  del.set_resource("pods");
  del.set_namespace_(req.namespace_());
  del.set_name(name);
  if (eviction.delete_options().has_grace_period_seconds()) {
    del.set_grace_period_seconds(eviction.delete_options().grace_period_seconds());
  }
  del.set_dry_run(req.dry_run());
  // The pod the budget was charged for, not one made since under its name.
  del.mutable_preconditions()->set_uid(pod.metadata().uid());
  // Pods that are going anyway, done, or not yet running disrupt nothing.
  const std::string& phase = pod.status().phase();
  if (!pod.metadata().deletion_timestamp().empty() || phase == "Succeeded" || phase == "Failed" ||
      phase == "Pending") {
    return Delete(del);
  }
  MKUBE_RETURN_IF_ERROR(ChargeDisruptionBudget(pod, req.dry_run()));
  return Delete(del);
}

absl::Status Registry::ChargeDisruptionBudget(const api::Pod& pod, bool dry_run) {
  const api::KindInfo& pdb_kind = *api::FindResource("poddisruptionbudgets");
  cache::Filter f;
  f.kind = &pdb_kind;
  f.ns = pod.metadata().namespace_();
  std::vector<std::string> names;
  for (const auto& e : cache_->List(f, 0, "").items) {
    const auto& pdb = static_cast<const api::PodDisruptionBudget&>(*e->object);
    auto sel = api::Selector::FromLabelSelector(pdb.spec().selector());
    if (sel.ok() && !sel->empty() && sel->Matches(pod.metadata().labels())) {
      names.push_back(pdb.metadata().name());
    }
  }
  if (names.empty()) return absl::OkStatus();
  if (names.size() > 1) {
    return absl::InternalError(
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
        "not support.");
  }
  const std::string key = Key(pdb_kind, f.ns, names[0]);
  Plan plan = [kind = &pdb_kind, key, name = names[0], pod_name = pod.metadata().name(),
               dry_run](const cache::EntryPtr& cur) -> absl::StatusOr<Write> {
    auto pdb = std::make_shared<api::PodDisruptionBudget>(
        static_cast<const api::PodDisruptionBudget&>(*cur->object));
    if (pdb->status().observed_generation() < pdb->metadata().generation() ||
        pdb->status().disruptions_allowed() <= 0) {
      return absl::ResourceExhaustedError(
          "Cannot evict pod as it would violate the pod's disruption budget.");
    }
    // One disruption fewer, and the pod remembered until the controller sees it gone.
    pdb->mutable_status()->set_disruptions_allowed(pdb->status().disruptions_allowed() - 1);
    (*pdb->mutable_status()->mutable_disrupted_pods())[pod_name] = api::NowRfc3339();
    Write w{.kind = kind, .key = key, .name = name, .revision = cur->revision};
    if (dry_run) w.answer = pdb->SerializeAsString();
    w.object = std::move(pdb);
    return w;
  };
  // The budget is judged on the store's copy: a lagging one could allow a disruption twice.
  return Wait([&](Done done) {
           ReadModifyWrite(pdb_kind, key, names[0], From::kStore, std::move(plan), std::move(done));
         })
      .status();
}

}  // namespace mkube::apiserver::registry
