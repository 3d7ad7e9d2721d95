// The registry's changes of existing objects: updates, patches, deletes, bindings and scale.
// Each is a plan run on the object as it is now (ReadModifyWrite), so one that names no
// version is planned again, never refused, when another writer changed the object first.
#include "api/defaults.h"
#include "api/managed_fields.h"
#include "api/object.h"
#include "api/strategy.h"
#include "api/validation.h"
#include "apiserver/registry/errors.h"
#include "apiserver/registry/registry.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::apiserver::registry {
namespace {

std::shared_ptr<google::protobuf::Message> CopyOf(const google::protobuf::Message& m) {
  std::shared_ptr<google::protobuf::Message> copy(m.New());
  copy->CopyFrom(m);
  return copy;
}

bool Scalable(const api::KindInfo& kind) {
  return kind.kind == "Deployment" || kind.kind == "ReplicaSet";
}

}  // namespace

absl::StatusOr<Registry::Write> Registry::PlanUpdate(const api::KindInfo* kind,
                                                     const std::string& key,
                                                     const google::protobuf::Message& obj,
                                                     const std::string& written, int64_t want,
                                                     bool status, bool dry_run, const Admit& admit,
                                                     const cache::Entry& current,
                                                     const std::string& manager) {
  const std::string& name = api::MetaOf(obj).name();
  // Admission first: a caller refused learns nothing of the object's version.
  if (admit) {
    MKUBE_RETURN_IF_ERROR(admit(*current.object));
  }
  if (want != 0 && want != current.revision) return Conflict(*kind, name);
  api::Object attempt{kind, std::unique_ptr<google::protobuf::Message>(obj.New()), written};
  attempt.message->CopyFrom(obj);
  api::PrepareForUpdate(*current.object, status, &attempt);
  if (!manager.empty() && !status) {
    MKUBE_RETURN_IF_ERROR(api::RecordManager(
        current.object.get(), attempt.message.get(),
        {.name = manager, .api_version = written, .time = api::NowRfc3339()}));
  }
  MKUBE_RETURN_IF_ERROR(api::Validate(attempt));
  MKUBE_RETURN_IF_ERROR(api::CheckFinalizers(*current.object, *attempt.message));
  Write w{.kind = kind, .key = key, .name = name, .revision = current.revision};
  if (dry_run) w.answer = attempt.message->SerializeAsString();
  // The last finalizer of an object being deleted is gone: so is the object.
  w.remove = api::ReadyToRemove(*attempt.message);
  w.object = std::move(attempt.message);
  return w;
}

void Registry::Update(const UpdateRequest& req, Admit admit, Done done) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return done(kind.status());
  if (req.subresource() == "scale") return done(UpdateScale(**kind, req));
  if (!req.subresource().empty() && req.subresource() != "status") {
    return done(NoSubresource(**kind, req.subresource()));
  }
  std::shared_ptr<google::protobuf::Message> obj = (*kind)->New();
  if (!obj->ParseFromString(req.object())) {
    return done(absl::InvalidArgumentError("the request body is not a valid object"));
  }
  const api::ObjectMeta& meta = api::MetaOf(*obj);
  const std::string ns =
      (*kind)->namespaced ? (req.namespace_().empty() ? meta.namespace_() : req.namespace_()) : "";
  const std::string key = Key(**kind, ns, meta.name());
  int64_t want = 0;
  if (!meta.resource_version().empty() && !ParseRevision(meta.resource_version(), &want)) {
    return done(Conflict(**kind, meta.name()));
  }
  Plan plan = [kind = *kind, obj, written = api::WrittenApiVersion(**kind, *obj), key, want,
               status = req.subresource() == "status", dry_run = req.dry_run(),
               admit = std::move(admit), manager = req.field_manager()](const cache::EntryPtr& cur) {
    return PlanUpdate(kind, key, *obj, written, want, status, dry_run, admit, *cur, manager);
  };
  ReadModifyWrite(**kind, key, meta.name(), From::kCache, std::move(plan), std::move(done));
}

absl::StatusOr<std::string> Registry::Patch(const PatchRequest& req) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  if (req.subresource() == "scale") return PatchScale(**kind, req);
  if (!req.subresource().empty() && req.subresource() != "status") {
    return NoSubresource(**kind, req.subresource());
  }
  const std::string key = Key(**kind, req.namespace_(), req.name());
  Plan plan = [kind = *kind, key, req](const cache::EntryPtr& cur) -> absl::StatusOr<Write> {
    const bool apply = req.patch_type() == "apply";
    const api::Manager m{.name = req.field_manager(),
                         .api_version = api::WrittenApiVersion(*kind, *cur->object),
                         .time = api::NowRfc3339()};
    auto patched = apply && !m.name.empty()
                       ? api::ApplyConfiguration(*cur->object, req.merge_patch(), m, req.force())
                       : api::ApplyPatch(*cur->object, req.patch_type(), req.merge_patch());
    if (!patched.ok()) return patched.status();
    // A patch names a version only by carrying one of its own: then it must match.
    int64_t want = 0;
    const std::string& rv = api::MetaOf(**patched).resource_version();
    if (rv != api::MetaOf(*cur->object).resource_version() && !ParseRevision(rv, &want)) {
      return Conflict(*kind, req.name());
    }
    return PlanUpdate(kind, key, **patched, api::WrittenApiVersion(*kind, **patched), want,
                      req.subresource() == "status", req.dry_run(), nullptr, *cur,
                      apply ? "" : req.field_manager());
  };
  return Wait([&](Done done) {
    ReadModifyWrite(**kind, key, req.name(), From::kCache, std::move(plan), std::move(done));
  });
}

absl::StatusOr<std::string> Registry::Delete(const DeleteRequest& req) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  const std::string key = Key(**kind, req.namespace_(), req.name());
  // Pods on a node terminate gracefully, and objects with finalizers wait for them: marked
  // now, removed once their node has stopped them and their finalizers are gone.
  const std::optional<int64_t> requested = req.has_grace_period_seconds()
                                               ? std::optional<int64_t>(req.grace_period_seconds())
                                               : std::nullopt;
  Plan plan = [kind = *kind, key, req,
               requested](const cache::EntryPtr& cur) -> absl::StatusOr<Write> {
    const api::ObjectMeta& meta = api::MetaOf(*cur->object);
    const auto& pre = req.preconditions();
    if (!pre.uid().empty() && pre.uid() != meta.uid()) {
      return absl::AbortedError(
          fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}",
                      pre.uid(), meta.uid()));
    }
    if (!pre.resource_version().empty() && pre.resource_version() != meta.resource_version()) {
      return absl::AbortedError(fmt::format(
          "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object "
          "meta: {}",
          pre.resource_version(), meta.resource_version()));
    }
    auto decision =
        api::DecideDelete(*cur->object, requested, req.propagation_policy(), api::NowRfc3339());
    if (!decision.ok()) return decision.status();
    Write w{.kind = kind, .key = key, .name = req.name(), .revision = cur->revision};
    if (decision->unchanged) {
      w.answer = cur->bytes;
    } else if (decision->marked) {
      if (req.dry_run()) w.answer = decision->marked->SerializeAsString();
      w.object = std::move(decision->marked);
    } else {
      if (req.dry_run()) w.answer = cur->bytes;
      w.remove = true;
      w.object = CopyOf(*cur->object);
    }
    return w;
  };
  // The store's copy: "being deleted already" is an answer without a write, which a lagging
  // copy must not give.
  return Wait([&](Done done) {
    ReadModifyWrite(**kind, key, req.name(), From::kStore, std::move(plan), std::move(done));
  });
}

void Registry::Bind(const api::KindInfo& kind, const CreateRequest& req, Done done) {
  if (kind.kind != "Pod") return done(NoSubresource(kind, req.subresource()));
  api::Binding binding;
  if (!binding.ParseFromString(req.object())) {
    return done(absl::InvalidArgumentError("the request body is not a valid Binding"));
  }
  const std::string name = req.name().empty() ? binding.metadata().name() : req.name();
  if (binding.target().name().empty()) {
    return done(absl::InvalidArgumentError(
        fmt::format("Binding \"{}\" is invalid: target.name: Required value", name)));
  }
  const std::string key = Key(kind, req.namespace_(), name);
  Plan plan = [kind = &kind, binding = std::move(binding), key, name,
               dry_run = req.dry_run()](const cache::EntryPtr& cur) -> absl::StatusOr<Write> {
    auto pod = std::make_shared<api::Pod>(static_cast<const api::Pod&>(*cur->object));
    if (!pod->spec().node_name().empty()) {
      return absl::AbortedError(fmt::format(
          "Operation cannot be fulfilled on pods/binding \"{}\": pod {} is already assigned to "
          "node \"{}\"",
          name, name, pod->spec().node_name()));
    }
    if (!pod->metadata().deletion_timestamp().empty()) {
      return absl::AbortedError(fmt::format(
          "Operation cannot be fulfilled on pods/binding \"{}\": pod {} is being deleted", name,
          name));
    }
    api::ApplyBinding(binding, pod.get(), api::NowRfc3339());
    Write w{.kind = kind, .key = key, .name = name, .revision = cur->revision};
    if (dry_run) w.answer = pod->SerializeAsString();
    w.object = std::move(pod);
    return w;
  };
  ReadModifyWrite(kind, key, name, From::kCache, std::move(plan), std::move(done));
}

absl::StatusOr<api::Scale> Registry::ScaleOf(const api::KindInfo& kind,
                                             const google::protobuf::Message& obj) {
  if (!Scalable(kind)) return NoSubresource(kind, "scale");
  api::Scale scale;
  scale.set_api_version("autoscaling/v1");
  scale.set_kind("Scale");
  const api::LabelSelector* selector = nullptr;
  if (kind.kind == "Deployment") {
    const auto& d = static_cast<const api::Deployment&>(obj);
    scale.mutable_spec()->set_replicas(d.spec().replicas());
    scale.mutable_status()->set_replicas(d.status().replicas());
    selector = &d.spec().selector();
  } else {
    const auto& rs = static_cast<const api::ReplicaSet&>(obj);
    scale.mutable_spec()->set_replicas(rs.spec().replicas());
    scale.mutable_status()->set_replicas(rs.status().replicas());
    selector = &rs.spec().selector();
  }
  const auto& meta = api::MetaOf(obj);
  scale.mutable_metadata()->set_name(meta.name());
  scale.mutable_metadata()->set_namespace_(meta.namespace_());
  scale.mutable_metadata()->set_uid(meta.uid());
  scale.mutable_metadata()->set_resource_version(meta.resource_version());
  scale.mutable_metadata()->set_creation_timestamp(meta.creation_timestamp());
  if (auto sel = api::Selector::FromLabelSelector(*selector); sel.ok()) {
    scale.mutable_status()->set_selector(sel->String());
  }
  return scale;
}

absl::StatusOr<Registry::Write> Registry::PlanScale(const api::KindInfo* kind,
                                                    const std::string& key, const api::Scale& scale,
                                                    bool dry_run, const cache::Entry& current,
                                                    const std::string& manager) {
  const std::string& name = api::MetaOf(*current.object).name();
  if (scale.spec().replicas() < 0) {
    return absl::InvalidArgumentError(fmt::format(
        "Scale \"{}\" is invalid: spec.replicas: Invalid value: {}: must be greater than or "
        "equal to 0",
        name, scale.spec().replicas()));
  }
  int64_t want = 0;
  const std::string& rv = scale.metadata().resource_version();
  if (!rv.empty() && (!ParseRevision(rv, &want) || want != current.revision)) {
    return Conflict(*kind, name);
  }
  std::shared_ptr<google::protobuf::Message> obj = CopyOf(*current.object);
  if (kind->kind == "Deployment") {
    static_cast<api::Deployment*>(obj.get())->mutable_spec()->set_replicas(scale.spec().replicas());
  } else {
    static_cast<api::ReplicaSet*>(obj.get())->mutable_spec()->set_replicas(scale.spec().replicas());
  }
  auto* meta = api::MutableMetaOf(obj.get());
  meta->set_generation(meta->generation() + (api::SameSpec(*obj, *current.object) ? 0 : 1));
  if (!manager.empty()) {
    MKUBE_RETURN_IF_ERROR(api::RecordManager(
        current.object.get(), obj.get(),
        {.name = manager, .api_version = kind->api_version(), .time = api::NowRfc3339(),
         .subresource = "scale"}));
  }
  Write w{.kind = kind, .key = key, .name = name, .revision = current.revision};
  if (dry_run) w.answer = obj->SerializeAsString();
  w.object = std::move(obj);
  return w;
}

absl::StatusOr<std::string> Registry::ScaleWrite(const api::KindInfo& kind, const std::string& ns,
                                                 const std::string& name, Plan plan) {
  const std::string key = Key(kind, ns, name);
  auto written = Wait([&](Done done) {
    ReadModifyWrite(kind, key, name, From::kCache, std::move(plan), std::move(done));
  });
  if (!written.ok()) return written.status();
  std::unique_ptr<google::protobuf::Message> obj(kind.New());
  if (!obj->ParseFromString(*written))
    return absl::InternalError("cannot decode the scaled object");
  MKUBE_ASSIGN_OR_RETURN(auto scale, ScaleOf(kind, *obj));
  return scale.SerializeAsString();
}

absl::StatusOr<std::string> Registry::UpdateScale(const api::KindInfo& kind,
                                                  const UpdateRequest& req) {
  if (!Scalable(kind)) return NoSubresource(kind, "scale");
  api::Scale scale;
  if (!scale.ParseFromString(req.object())) {
    return absl::InvalidArgumentError("the request body is not a valid Scale");
  }
  const std::string key = Key(kind, req.namespace_(), scale.metadata().name());
  return ScaleWrite(
      kind, req.namespace_(), scale.metadata().name(),
      [kind = &kind, key, scale, dry_run = req.dry_run(),
       manager = req.field_manager()](const cache::EntryPtr& cur) {
        return PlanScale(kind, key, scale, dry_run, *cur, manager);
      });
}

absl::StatusOr<std::string> Registry::PatchScale(const api::KindInfo& kind,
                                                 const PatchRequest& req) {
  if (!Scalable(kind)) return NoSubresource(kind, "scale");
  const std::string key = Key(kind, req.namespace_(), req.name());
  return ScaleWrite(kind, req.namespace_(), req.name(),
                    [kind = &kind, key, req](const cache::EntryPtr& cur) -> absl::StatusOr<Write> {
                      MKUBE_ASSIGN_OR_RETURN(auto scale, ScaleOf(*kind, *cur->object));
                      auto patched = api::ApplyPatch(scale, req.patch_type(), req.merge_patch());
                      if (!patched.ok()) return patched.status();
                      return PlanScale(kind, key, static_cast<const api::Scale&>(**patched),
                                       req.dry_run(), *cur, req.field_manager());
                    });
}

}  // namespace mkube::apiserver::registry
