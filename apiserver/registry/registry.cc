#include "apiserver/registry/registry.h"

#include <charconv>
#include <random>

#include "api/defaults.h"
#include "api/object.h"
#include "api/strategy.h"
#include "api/validation.h"
#include "apiserver/registry/errors.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::apiserver::registry {
namespace {

constexpr auto kCacheWait = std::chrono::seconds(5);
constexpr int kPatchRetries = 5;

std::string Msg(const absl::Status& st) { return std::string(st.message()); }

bool ParseRevision(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string RandomSuffix() {
  static thread_local std::mt19937 rng(std::random_device{}());
  static constexpr char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s.push_back(kChars[rng() % (sizeof(kChars) - 1)]);
  return s;
}

}  // namespace

std::string Key(const api::KindInfo& kind, const std::string& ns, const std::string& name) {
  if (kind.namespaced) return fmt::format("/registry/{}/{}/{}", kind.resource, ns, name);
  return fmt::format("/registry/{}/{}", kind.resource, name);
}

std::string Registry::QualifiedResource(const api::KindInfo& kind) {
  return QualifiedResourceOf(kind);
}

Registry::Registry(storage::StoreClient* store, cache::WatchCache* cache, RegistryOptions options)
    : store_(store), cache_(cache), options_(options) {}

absl::StatusOr<const api::KindInfo*> Registry::Resolve(const std::string& resource) const {
  const api::KindInfo* kind = api::FindResource(resource);
  if (!kind) {
    return absl::NotFoundError(
        fmt::format("the server doesn't have a resource type \"{}\"", resource));
  }
  if (kind->measured) {  // served from the agents' figures by the API front, never stored
    return absl::UnimplementedError(
        "the server does not allow this method on the requested resource");
  }
  return kind;
}

absl::Status Registry::Bootstrap() {
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    api::Namespace obj;
    obj.mutable_metadata()->set_name(ns);
    CreateRequest req;
    req.set_resource("namespaces");
    req.set_object(obj.SerializeAsString());
    auto r = Create(req);
    if (!r.ok() && r.status().code() != absl::StatusCode::kAlreadyExists) return r.status();
  }
  return absl::OkStatus();
}

void Registry::Create(const CreateRequest& req, Done done) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return done(kind.status());
  if (req.subresource() == "binding") return Bind(**kind, req, std::move(done));
  if (!req.subresource().empty()) return done(CreateSubresource(**kind, req));
  auto w = PlanCreate(**kind, req);
  if (!w.ok()) return done(w.status());
  const std::string& ns = api::MetaOf(*w->object).namespace_();
  // The namespace must exist: the cache knows it, unless it is brand new.
  const std::string ns_key = Key(*api::FindResource("namespaces"), "", ns);
  if (!(*kind)->namespaced || cache_->Get(ns_key)) return Execute(std::move(*w), std::move(done));
  store_->GetAsync(ns_key, [this, w = std::move(*w), ns, done = std::move(done)](auto r) mutable {
    if (!r.ok()) return done(r.status());
    if (r->kvs().empty()) {
      return done(absl::NotFoundError(fmt::format("namespaces \"{}\" not found", ns)));
    }
    Execute(std::move(w), std::move(done));
  });
}

absl::StatusOr<Registry::Write> Registry::PlanCreate(const api::KindInfo& kind,
                                                     const CreateRequest& req) const {
  api::Object obj{&kind, kind.New(), ""};
  if (!obj.message->ParseFromString(req.object())) {
    return absl::InvalidArgumentError("the request body is not a valid object");
  }
  obj.written_api_version = api::WrittenApiVersion(kind, *obj.message);
  api::ObjectMeta* meta = api::MutableMetaOf(obj.message.get());
  if (kind.namespaced) {
    if (!req.namespace_().empty() && !meta->namespace_().empty() &&
        req.namespace_() != meta->namespace_()) {
      return absl::InvalidArgumentError(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
    if (meta->namespace_().empty()) meta->set_namespace_(req.namespace_());
  } else {
    meta->clear_namespace_();
  }
  if (meta->name().empty() && !meta->generate_name().empty()) {
    meta->set_name(meta->generate_name() + RandomSuffix());
  }
  api::SetTypeMeta(obj.message.get(), kind.api_version(), kind.kind);
  api::Default(obj);
  if (auto* pod = dynamic_cast<api::Pod*>(obj.message.get())) {
    api::AddDefaultTolerations(pod, options_.default_not_ready_toleration_seconds,
                               options_.default_unreachable_toleration_seconds);
  }
  if (auto st = api::Validate(obj); !st.ok()) return st;
  api::PrepareForCreate(obj.message.get(), api::NowRfc3339());
  Write w{.kind = &kind, .key = Key(kind, meta->namespace_(), meta->name()), .name = meta->name()};
  if (req.dry_run()) w.answer = obj.message->SerializeAsString();
  w.object = std::move(obj.message);
  return w;
}

absl::StatusOr<std::string> Registry::Get(const GetRequest& req) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  auto cur = Current(**kind, Key(**kind, req.namespace_(), req.name()), req.name());
  if (!cur.ok()) return cur.status();
  if (req.subresource() == "scale") return ScaleOf(**kind, **cur);
  if (!req.subresource().empty() && req.subresource() != "status") {
    return NoSubresource(**kind, req.subresource());
  }
  return (*cur)->bytes;
}

absl::StatusOr<cache::Filter> Registry::MakeFilter(const api::KindInfo& kind,
                                                   const std::string& ns,
                                                   const std::string& labels,
                                                   const std::string& fields) const {
  cache::Filter f;
  f.kind = &kind;
  f.ns = kind.namespaced ? ns : "";
  auto l = api::Selector::Parse(labels);
  if (!l.ok()) return absl::InvalidArgumentError(fmt::format("unable to parse requirement: {}", Msg(l.status())));
  f.labels = std::move(*l);
  auto fs = api::FieldSelector::Parse(fields);
  if (!fs.ok()) return fs.status();
  if (auto st = fs->CheckSupported(kind); !st.ok()) return st;
  f.fields = std::move(*fs);
  return f;
}

absl::StatusOr<ListReply> Registry::List(const ListRequest& req) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  auto filter = MakeFilter(**kind, req.namespace_(), req.label_selector(), req.field_selector());
  if (!filter.ok()) return filter.status();
  int64_t min_rv = 0;
  if (req.resource_version().empty() && req.continue_().empty()) {
    // A consistent list: the cache must have caught up with the store's current revision.
    auto head = store_->Get("/registry/");
    if (!head.ok()) return head.status();
    min_rv = head->header().revision();
  } else if (req.resource_version() != "0" && !req.resource_version().empty() &&
             !ParseRevision(req.resource_version(), &min_rv)) {
    return absl::InvalidArgumentError(
        fmt::format("invalid resource version \"{}\"", req.resource_version()));
  }
  if (min_rv > 0) {
    if (auto st = cache_->WaitFor(min_rv, kCacheWait); !st.ok()) return st;
  }
  auto result = cache_->List(*filter, req.limit(), req.continue_());
  ListReply reply;
  reply.set_resource_version(std::to_string(result.revision));
  reply.set_continue_(result.continue_key);
  reply.set_remaining_item_count(result.remaining);
  for (const auto& e : result.items) reply.add_items(e->bytes);
  return reply;
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
               admit = std::move(admit)](const cache::EntryPtr& cur) -> absl::StatusOr<Write> {
    const std::string& name = api::MetaOf(*obj).name();
    // Admission first: a caller refused learns nothing of the object's version.
    if (admit) {
      if (auto st = admit(*cur->object); !st.ok()) return st;
    }
    if (want != 0 && want != cur->revision) return Conflict(*kind, name);
    api::Object attempt{kind, std::unique_ptr<google::protobuf::Message>(obj->New()), written};
    attempt.message->CopyFrom(*obj);
    api::PrepareForUpdate(*cur->object, status, &attempt);
    if (auto st = api::Validate(attempt); !st.ok()) return st;
    if (auto st = api::CheckFinalizers(*cur->object, *attempt.message); !st.ok()) return st;
    Write w{.kind = kind, .key = key, .name = name, .revision = cur->revision};
    if (dry_run) w.answer = attempt.message->SerializeAsString();
    // The last finalizer of an object being deleted is gone: so is the object.
    w.remove = api::ReadyToRemove(*attempt.message);
    w.object = std::move(attempt.message);
    return w;
  };
  ReadModifyWrite(**kind, key, meta.name(), req.dry_run(), std::move(plan), std::move(done));
}

absl::StatusOr<std::string> Registry::Patch(const PatchRequest& req) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  const std::string key = Key(**kind, req.namespace_(), req.name());
  for (int attempt = 0;; ++attempt) {
    auto cur = Current(**kind, key, req.name());
    if (!cur.ok()) return cur.status();
    auto patched = api::ApplyMergePatch(*(*cur)->object, req.merge_patch());
    if (!patched.ok()) return patched.status();
    UpdateRequest update;
    update.set_resource(req.resource());
    update.set_namespace_(req.namespace_());
    update.set_subresource(req.subresource());
    update.set_dry_run(req.dry_run());
    api::MutableMetaOf(patched->get())->set_resource_version(std::to_string((*cur)->revision));
    update.set_object((*patched)->SerializeAsString());
    auto r = Update(update);
    // A patch does not name a version: on a concurrent change, apply it again.
    if (r.ok() || r.status().code() != absl::StatusCode::kAborted || attempt == kPatchRetries) {
      return r;
    }
  }
}

absl::StatusOr<std::string> Registry::Delete(const DeleteRequest& req) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  const std::string key = Key(**kind, req.namespace_(), req.name());
  auto cur = Current(**kind, key, req.name());
  if (!cur.ok()) return cur.status();
  const api::ObjectMeta& meta = api::MetaOf(*(*cur)->object);
  const auto& pre = req.preconditions();
  if (!pre.uid().empty() && pre.uid() != meta.uid()) {
    return absl::AbortedError(fmt::format(
        "Precondition failed: UID in precondition: {}, UID in object meta: {}", pre.uid(),
        meta.uid()));
  }
  if (!pre.resource_version().empty() && pre.resource_version() != meta.resource_version()) {
    return absl::AbortedError(fmt::format(
        "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object "
        "meta: {}",
        pre.resource_version(), meta.resource_version()));
  }
  // Pods on a node terminate gracefully, and objects with finalizers wait for them: marked
  // now, removed once their node has stopped them and their finalizers are gone.
  const std::optional<int64_t> requested =
      req.has_grace_period_seconds() ? std::optional<int64_t>(req.grace_period_seconds())
                                     : std::nullopt;
  auto decision =
      api::DecideDelete(*(*cur)->object, requested, req.propagation_policy(), api::NowRfc3339());
  if (!decision.ok()) return decision.status();
  if (decision->unchanged) return (*cur)->bytes;
  if (decision->marked) {
    if (req.dry_run()) return decision->marked->SerializeAsString();
    return Store(**kind, key, req.name(), (*cur)->revision, *decision->marked);
  }
  if (req.dry_run()) return (*cur)->bytes;
  return Remove(**kind, key, req.name(), (*cur)->revision, *(*cur)->object);
}

absl::Status Registry::NoSubresource(const api::KindInfo& kind, const std::string& sub) {
  return absl::NotFoundError(fmt::format("the server could not find the requested resource: {}/{}",
                                         kind.resource, sub));
}

absl::StatusOr<std::string> Registry::CreateSubresource(const api::KindInfo& kind,
                                                        const CreateRequest& req) {
  if (kind.kind != "Pod" || req.subresource() != "eviction") {
    return NoSubresource(kind, req.subresource());
  }
  return Evict(kind, req);
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
    // Changed meanwhile: bound by someone else, or just updated; the caller retries.
    w.lost_race = absl::AbortedError(fmt::format(
        "Operation cannot be fulfilled on pods/binding \"{}\": the object has been modified",
        name));
    w.object = std::move(pod);
    return w;
  };
  ReadModifyWrite(kind, key, name, req.dry_run(), std::move(plan), std::move(done));
}

absl::StatusOr<std::string> Registry::Evict(const api::KindInfo& kind, const CreateRequest& req) {
  api::Eviction eviction;
  if (!eviction.ParseFromString(req.object())) {
    return absl::InvalidArgumentError("the request body is not a valid Eviction");
  }
  const std::string name = req.name().empty() ? eviction.metadata().name() : req.name();
  DeleteRequest del;
  del.set_resource("pods");
  del.set_namespace_(req.namespace_());
  del.set_name(name);
  if (eviction.delete_options().has_grace_period_seconds()) {
    del.set_grace_period_seconds(eviction.delete_options().grace_period_seconds());
  }
  del.set_dry_run(req.dry_run());
  auto cur = Current(kind, Key(kind, req.namespace_(), name), name);
  if (!cur.ok()) return cur.status();
  const auto& pod = static_cast<const api::Pod&>(*(*cur)->object);
  // Pods that are going anyway, done, or not yet running disrupt nothing.
  const std::string& phase = pod.status().phase();
  if (!pod.metadata().deletion_timestamp().empty() || phase == "Succeeded" ||
      phase == "Failed" || phase == "Pending") {
    return Delete(del);
  }
  if (auto st = ChargeDisruptionBudget(pod, req.dry_run()); !st.ok()) return st;
  return Delete(del);
}

absl::Status Registry::ChargeDisruptionBudget(const api::Pod& pod, bool dry_run) {
  const api::KindInfo& pdb_kind = *api::FindResource("poddisruptionbudgets");
  for (int attempt = 0; attempt <= kPatchRetries; ++attempt) {
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
    auto cur = Current(pdb_kind, key, names[0]);
    if (!cur.ok()) return cur.status();
    api::PodDisruptionBudget pdb = static_cast<const api::PodDisruptionBudget&>(*(*cur)->object);
    constexpr char kRefused[] = "Cannot evict pod as it would violate the pod's disruption budget.";
    if (pdb.status().observed_generation() < pdb.metadata().generation() ||
        pdb.status().disruptions_allowed() <= 0) {
      return absl::ResourceExhaustedError(kRefused);
    }
    // One disruption fewer, and the pod remembered until the controller sees it gone.
    pdb.mutable_status()->set_disruptions_allowed(pdb.status().disruptions_allowed() - 1);
    (*pdb.mutable_status()->mutable_disrupted_pods())[pod.metadata().name()] = api::NowRfc3339();
    if (dry_run) return absl::OkStatus();
    auto stored = Store(pdb_kind, key, names[0], (*cur)->revision, pdb);
    if (stored.ok()) return absl::OkStatus();
    if (stored.status().code() != absl::StatusCode::kAborted) return stored.status();
  }
  return absl::ResourceExhaustedError(
      "Cannot evict pod: its disruption budget is changing too fast; please try again");
}

absl::StatusOr<std::string> Registry::ScaleOf(const api::KindInfo& kind, const cache::Entry& e) {
  if (kind.kind != "Deployment" && kind.kind != "ReplicaSet") {
    return NoSubresource(kind, "scale");
  }
  api::Scale scale;
  scale.set_api_version("autoscaling/v1");
  scale.set_kind("Scale");
  const api::LabelSelector* selector = nullptr;
  if (kind.kind == "Deployment") {
    const auto& d = static_cast<const api::Deployment&>(*e.object);
    scale.mutable_spec()->set_replicas(d.spec().replicas());
    scale.mutable_status()->set_replicas(d.status().replicas());
    selector = &d.spec().selector();
  } else {
    const auto& rs = static_cast<const api::ReplicaSet&>(*e.object);
    scale.mutable_spec()->set_replicas(rs.spec().replicas());
    scale.mutable_status()->set_replicas(rs.status().replicas());
    selector = &rs.spec().selector();
  }
  const auto& meta = api::MetaOf(*e.object);
  scale.mutable_metadata()->set_name(meta.name());
  scale.mutable_metadata()->set_namespace_(meta.namespace_());
  scale.mutable_metadata()->set_uid(meta.uid());
  scale.mutable_metadata()->set_resource_version(meta.resource_version());
  scale.mutable_metadata()->set_creation_timestamp(meta.creation_timestamp());
  if (auto sel = api::Selector::FromLabelSelector(*selector); sel.ok()) {
    scale.mutable_status()->set_selector(sel->String());
  }
  return scale.SerializeAsString();
}

absl::StatusOr<std::string> Registry::UpdateScale(const api::KindInfo& kind,
                                                  const UpdateRequest& req) {
  if (kind.kind != "Deployment" && kind.kind != "ReplicaSet") {
    return NoSubresource(kind, "scale");
  }
  api::Scale scale;
  if (!scale.ParseFromString(req.object())) {
    return absl::InvalidArgumentError("the request body is not a valid Scale");
  }
  if (scale.spec().replicas() < 0) {
    return absl::InvalidArgumentError(fmt::format(
        "Scale \"{}\" is invalid: spec.replicas: Invalid value: {}: must be greater than or "
        "equal to 0",
        scale.metadata().name(), scale.spec().replicas()));
  }
  const std::string& name = scale.metadata().name();
  const std::string key = Key(kind, req.namespace_(), name);
  auto cur = Current(kind, key, name);
  if (!cur.ok()) return cur.status();
  int64_t want = 0;
  if (!scale.metadata().resource_version().empty() &&
      (!ParseRevision(scale.metadata().resource_version(), &want) || want != (*cur)->revision)) {
    return Conflict(kind, name);
  }
  std::unique_ptr<google::protobuf::Message> obj((*cur)->object->New());
  obj->CopyFrom(*(*cur)->object);
  if (kind.kind == "Deployment") {
    static_cast<api::Deployment*>(obj.get())->mutable_spec()->set_replicas(scale.spec().replicas());
  } else {
    static_cast<api::ReplicaSet*>(obj.get())->mutable_spec()->set_replicas(scale.spec().replicas());
  }
  auto* meta = api::MutableMetaOf(obj.get());
  meta->set_generation(meta->generation() + (api::SameSpec(*obj, *(*cur)->object) ? 0 : 1));
  if (!req.dry_run()) {
    auto stored = Store(kind, key, name, (*cur)->revision, *obj);
    if (!stored.ok()) return stored.status();
    obj->ParseFromString(*stored);
  }
  cache::Entry entry;
  entry.object = std::shared_ptr<const google::protobuf::Message>(std::move(obj));
  return ScaleOf(kind, entry);
}

absl::StatusOr<uint64_t> Registry::Watch(const WatchRequest& req, cache::WatchSinkPtr sink) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  auto filter = MakeFilter(**kind, req.namespace_(), req.label_selector(), req.field_selector());
  if (!filter.ok()) return filter.status();
  int64_t from = 0;
  if (!req.resource_version().empty() && req.resource_version() != "0" &&
      !ParseRevision(req.resource_version(), &from)) {
    return absl::InvalidArgumentError(
        fmt::format("invalid resource version \"{}\"", req.resource_version()));
  }
  return cache_->Watch(std::move(*filter), from, req.allow_bookmarks(), std::move(sink));
}

}  // namespace mkube::apiserver::registry
