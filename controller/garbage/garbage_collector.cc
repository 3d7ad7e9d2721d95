#include "controller/garbage/garbage_collector.h"

#include <algorithm>

#include "api/kinds.h"
#include "api/object.h"
#include "api/strategy.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::controller::garbage {
namespace {

bool HasFinalizer(const api::ObjectMeta& meta, const std::string& f) {
  return std::find(meta.finalizers().begin(), meta.finalizers().end(), f) !=
         meta.finalizers().end();
}

std::string NsKey(const api::ObjectMeta& meta) {
  return meta.namespace_().empty() ? meta.name() : meta.namespace_() + "/" + meta.name();
}

bool Gone(const absl::Status& st) {
  // NotFound: deleted meanwhile; Aborted on a uid precondition: replaced by another object.
  return st.code() == absl::StatusCode::kNotFound;
}

}  // namespace

GarbageCollector::GarbageCollector(client::ApiClient* client, client::Clock* clock)
    : Controller("garbage-collector", clock), client_(client) {}

const Followed* GarbageCollector::Find(const std::string& resource) const {
  for (const auto& f : followed_) {
    if (f->resource() == resource) return f.get();
  }
  return nullptr;
}

absl::StatusOr<bool> GarbageCollector::OwnerExists(const std::string& ns,
                                                    const api::OwnerReference& ref,
                                                    bool ask_server) const {
  const api::KindInfo* kind = api::FindKind(ref.api_version(), ref.kind());
  if (!kind) return true;  // a kind this cluster does not serve: nothing to decide on
  const std::string key = kind->namespaced ? ns + "/" + ref.name() : ref.name();
  if (const Followed* f = Find(kind->resource)) {
    ObjectPtr owner = f->Get(key);
    if (owner && api::MetaOf(*owner).uid() == ref.uid()) return true;
  }
  if (!ask_server) return false;
  apiserver::GetRequest req;
  req.set_resource(kind->resource);
  req.set_namespace_(kind->namespaced ? ns : "");
  req.set_name(ref.name());
  auto bytes = client_->GetRaw(req);
  if (!bytes.ok()) {
    if (bytes.status().code() == absl::StatusCode::kNotFound) return false;
    return bytes.status();
  }
  auto obj = kind->New();
  if (!obj->ParseFromString(*bytes)) return absl::DataLossError("cannot decode the owner");
  return api::MetaOf(*obj).uid() == ref.uid();
}

std::vector<std::pair<std::string, ObjectPtr>> GarbageCollector::AllDependents(
    const std::string& owner_uid) const {
  std::vector<std::pair<std::string, ObjectPtr>> out;
  for (const auto& f : followed_) {
    for (auto& o : f->DependentsOf(owner_uid)) out.emplace_back(f->resource(), std::move(o));
  }
  return out;
}

void GarbageCollector::EnqueueDependents(const std::string& owner_uid) {
  for (const auto& [resource, dep] : AllDependents(owner_uid)) {
    queue().Add(resource + "|" + NsKey(api::MetaOf(*dep)));
  }
}

void GarbageCollector::EnqueueOwnersInForeground(const google::protobuf::Message& obj) {
  const api::ObjectMeta& meta = api::MetaOf(obj);
  for (const auto& ref : meta.owner_references()) {
    const api::KindInfo* kind = api::FindKind(ref.api_version(), ref.kind());
    const Followed* f = kind ? Find(kind->resource) : nullptr;
    if (!f) continue;
    ObjectPtr owner = f->Get(kind->namespaced ? meta.namespace_() + "/" + ref.name() : ref.name());
    if (!owner) continue;
    const api::ObjectMeta& om = api::MetaOf(*owner);
    if (om.uid() == ref.uid() && HasFinalizer(om, api::kForegroundFinalizer)) {
      queue().Add(kind->resource + "|" + NsKey(om));
    }
  }
}

void GarbageCollector::OnChange(const std::string& resource, const ObjectPtr& old_obj,
                                const ObjectPtr& obj) {
  const api::ObjectMeta& meta = api::MetaOf(*obj);
  const std::string key = resource + "|" + NsKey(meta);
  if (!meta.deletion_timestamp().empty() &&
      (HasFinalizer(meta, api::kOrphanFinalizer) ||
       HasFinalizer(meta, api::kForegroundFinalizer))) {
    queue().Add(key);
  }
  for (const auto& ref : meta.owner_references()) {
    auto exists = OwnerExists(meta.namespace_(), ref, /*ask_server=*/false);
    if (!exists.ok() || !*exists) {
      queue().Add(key);  // the sync asks the apiserver
      break;
    }
  }
  if (old_obj) {
    const api::ObjectMeta& old_meta = api::MetaOf(*old_obj);
    if (old_meta.deletion_timestamp() != meta.deletion_timestamp() ||
        old_meta.owner_references_size() != meta.owner_references_size()) {
      EnqueueOwnersInForeground(*old_obj);
    }
  }
}

void GarbageCollector::OnDelete(const std::string& resource, const ObjectPtr& obj) {
  EnqueueDependents(api::MetaOf(*obj).uid());
  EnqueueOwnersInForeground(*obj);
}

absl::Status GarbageCollector::Sync(const std::string& key) {
  const size_t bar = key.find('|');
  if (bar == std::string::npos) return absl::OkStatus();
  const std::string resource = key.substr(0, bar);
  const Followed* f = Find(resource);
  ObjectPtr obj = f ? f->Get(key.substr(bar + 1)) : nullptr;
  if (!obj) return absl::OkStatus();
  const api::ObjectMeta& meta = api::MetaOf(*obj);
  if (!meta.deletion_timestamp().empty()) {
    if (HasFinalizer(meta, api::kOrphanFinalizer)) return OrphanDependents(resource, *obj);
    if (HasFinalizer(meta, api::kForegroundFinalizer)) {
      return DeleteDependentsFirst(resource, *obj);
    }
    return absl::OkStatus();
  }
  if (meta.owner_references().empty()) return absl::OkStatus();
  return CheckOwners(resource, *obj);
}

absl::Status GarbageCollector::CheckOwners(const std::string& resource,
                                           const google::protobuf::Message& obj, bool fresh) {
  const api::ObjectMeta& meta = api::MetaOf(obj);
  std::vector<std::string> dangling;
  for (const auto& ref : meta.owner_references()) {
    MKUBE_ASSIGN_OR_RETURN(auto exists, OwnerExists(meta.namespace_(), ref, /*ask_server=*/true));
    if (!exists) dangling.push_back(ref.uid());
  }
  if (dangling.empty()) return absl::OkStatus();
  if (!fresh) {
    // The cache may not have seen the reference go yet (an owner deleted with Orphan drops it
    // just before it goes): read the object again.
    apiserver::GetRequest req;
    req.set_resource(resource);
    req.set_namespace_(meta.namespace_());
    req.set_name(meta.name());
    auto bytes = client_->GetRaw(req);
    if (!bytes.ok()) return Gone(bytes.status()) ? absl::OkStatus() : bytes.status();
    std::unique_ptr<google::protobuf::Message> latest(obj.New());
    if (!latest->ParseFromString(*bytes)) return absl::DataLossError("cannot decode the object");
    const api::ObjectMeta& lm = api::MetaOf(*latest);
    if (lm.uid() != meta.uid() || !lm.deletion_timestamp().empty()) return absl::OkStatus();
    return CheckOwners(resource, *latest, /*fresh=*/true);
  }
  if (dangling.size() == static_cast<size_t>(meta.owner_references_size())) {
    return DeleteObject(resource, obj, "Background", /*exact=*/true);
  }
  // Some owners are left: only the references to the gone ones go.
  std::unique_ptr<google::protobuf::Message> copy(obj.New());
  copy->CopyFrom(obj);
  auto* refs = api::MutableMetaOf(copy.get())->mutable_owner_references();
  for (int i = refs->size() - 1; i >= 0; --i) {
    if (std::find(dangling.begin(), dangling.end(), refs->Get(i).uid()) != dangling.end()) {
      refs->DeleteSubrange(i, 1);
    }
  }
  apiserver::UpdateRequest req;
  req.set_resource(resource);
  req.set_namespace_(meta.namespace_());
  req.set_object(copy->SerializeAsString());
  auto r = client_->UpdateRaw(req);
  return r.ok() || Gone(r.status()) ? absl::OkStatus() : r.status();
}

absl::Status GarbageCollector::OrphanDependents(const std::string& resource,
                                                const google::protobuf::Message& owner) {
  const std::string& uid = api::MetaOf(owner).uid();
  for (const auto& [dep_resource, dep] : AllDependents(uid)) {
    std::unique_ptr<google::protobuf::Message> copy(dep->New());
    copy->CopyFrom(*dep);
    auto* refs = api::MutableMetaOf(copy.get())->mutable_owner_references();
    for (int i = refs->size() - 1; i >= 0; --i) {
      if (refs->Get(i).uid() == uid) refs->DeleteSubrange(i, 1);
    }
    apiserver::UpdateRequest req;
    req.set_resource(dep_resource);
    req.set_namespace_(api::MetaOf(*dep).namespace_());
    req.set_object(copy->SerializeAsString());
    auto r = client_->UpdateRaw(req);
    if (!r.ok() && !Gone(r.status())) return r.status();
  }
  return RemoveFinalizer(resource, owner, api::kOrphanFinalizer);
}

absl::Status GarbageCollector::DeleteDependentsFirst(const std::string& resource,
                                                     const google::protobuf::Message& owner) {
  const std::string& uid = api::MetaOf(owner).uid();
  bool blocked = false;
  for (const auto& [dep_resource, dep] : AllDependents(uid)) {
    const api::ObjectMeta& meta = api::MetaOf(*dep);
    for (const auto& ref : meta.owner_references()) {
      if (ref.uid() == uid && ref.block_owner_deletion()) blocked = true;
    }
    if (meta.deletion_timestamp().empty()) {
      MKUBE_RETURN_IF_ERROR(DeleteObject(dep_resource, *dep, "Foreground"));
    }
  }
  // The dependents' deletions bring the owner back here; it goes when none blocks it.
  if (blocked) return absl::OkStatus();
  return RemoveFinalizer(resource, owner, api::kForegroundFinalizer);
}

absl::Status GarbageCollector::RemoveFinalizer(const std::string& resource,
                                               const google::protobuf::Message& obj,
                                               const std::string& finalizer) {
  std::unique_ptr<google::protobuf::Message> copy(obj.New());
  copy->CopyFrom(obj);
  auto* finalizers = api::MutableMetaOf(copy.get())->mutable_finalizers();
  for (int i = finalizers->size() - 1; i >= 0; --i) {
    if (finalizers->Get(i) == finalizer) finalizers->DeleteSubrange(i, 1);
  }
  apiserver::UpdateRequest req;
  req.set_resource(resource);
  req.set_namespace_(api::MetaOf(obj).namespace_());
  req.set_object(copy->SerializeAsString());
  auto r = client_->UpdateRaw(req);
  return r.ok() || Gone(r.status()) ? absl::OkStatus() : r.status();
}

absl::Status GarbageCollector::DeleteObject(const std::string& resource,
                                            const google::protobuf::Message& obj,
                                            const std::string& propagation, bool exact) {
  const api::ObjectMeta& meta = api::MetaOf(obj);
  apiserver::DeleteRequest req;
  req.set_resource(resource);
  req.set_namespace_(meta.namespace_());
  req.set_name(meta.name());
  req.set_propagation_policy(propagation);
  req.mutable_preconditions()->set_uid(meta.uid());
  if (exact) req.mutable_preconditions()->set_resource_version(meta.resource_version());
  auto r = client_->Delete(req);
  if (r.ok() || Gone(r.status())) return absl::OkStatus();
  // A uid precondition that failed: the name now holds another object, not ours to delete.
  if (r.status().code() == absl::StatusCode::kAborted &&
      r.status().message().find("Precondition failed: UID") != absl::string_view::npos) {
    return absl::OkStatus();
  }
  return r.status();
}

}  // namespace mkube::controller::garbage
