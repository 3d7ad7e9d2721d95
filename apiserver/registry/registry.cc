#include "apiserver/registry/registry.h"

#include <charconv>
#include <random>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/managed_fields.h"
#include "api/object.h"
#include "api/strategy.h"
#include "api/validation.h"
#include "apiserver/registry/errors.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::apiserver::registry {
namespace {

constexpr auto kCacheWait = std::chrono::seconds(5);

std::string Msg(const absl::Status& st) { return std::string(st.message()); }

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

bool ParseRevision(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string Registry::QualifiedResource(const api::KindInfo& kind) {
  return QualifiedResourceOf(kind);
}

Registry::Registry(storage::Storage* store, cache::WatchCache* cache, RegistryOptions options)
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
    // As Kubernetes does: the prefix cut to 58 characters, so the name fits a DNS label.
    constexpr size_t kMaxGeneratedPrefix = 63 - 5;
    meta->set_name(meta->generate_name().substr(0, kMaxGeneratedPrefix) + RandomSuffix());
  }
  api::SetTypeMeta(obj.message.get(), kind.api_version(), kind.kind);
  // An applied configuration's fields are those it sets, before the server's defaults.
  meta->clear_managed_fields();
  const api::PatchJson applied = req.applied() ? api::EncodeJson(*obj.message) : api::PatchJson();
  api::Default(obj);
  if (auto* pod = dynamic_cast<api::Pod*>(obj.message.get())) {
    api::AddDefaultTolerations(pod, options_.default_not_ready_toleration_seconds,
                               options_.default_unreachable_toleration_seconds);
  }
  MKUBE_RETURN_IF_ERROR(api::Validate(obj));
  api::PrepareForCreate(obj.message.get(), api::NowRfc3339());
  if (!req.field_manager().empty()) {
    const api::Manager m{.name = req.field_manager(), .api_version = obj.written_api_version,
                         .time = api::MetaOf(*obj.message).creation_timestamp()};
    MKUBE_RETURN_IF_ERROR(req.applied() ? api::RecordApplied(applied, obj.message.get(), m)
                                        : api::RecordManager(nullptr, obj.message.get(), m));
  }
  Write w{.kind = &kind, .key = Key(kind, meta->namespace_(), meta->name()), .name = meta->name()};
  if (req.dry_run()) w.answer = obj.message->SerializeAsString();
  w.object = std::move(obj.message);
  return w;
}

absl::StatusOr<std::string> Registry::Get(const GetRequest& req) {
  return Wait([&](Done done) { Get(req, std::move(done)); });
}

void Registry::Get(const GetRequest& req, Done done) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return done(kind.status());
  if (!req.subresource().empty() && req.subresource() != "status" &&
      req.subresource() != "scale") {
    return done(NoSubresource(**kind, req.subresource()));
  }
  const std::string key = Key(**kind, req.namespace_(), req.name());
  store_->GetAsync(key, [kind = *kind, key, req, done = std::move(done)](auto r) {
    auto cur = Found(*kind, key, req.name(), std::move(r));
    if (!cur.ok()) return done(cur.status());
    if (req.subresource() != "scale") return done((*cur)->bytes);
    auto scale = ScaleOf(*kind, *(*cur)->object);
    if (!scale.ok()) return done(scale.status());
    done(scale->SerializeAsString());
  });
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
  MKUBE_ASSIGN_OR_RETURN(auto fs, api::FieldSelector::Parse(fields));
  MKUBE_RETURN_IF_ERROR(fs.CheckSupported(kind));
  f.fields = std::move(fs);
  return f;
}

absl::StatusOr<ListReply> Registry::List(const ListRequest& req) {
  MKUBE_ASSIGN_OR_RETURN(auto result, ListEntries(req));
  ListReply reply;
  reply.set_resource_version(std::to_string(result.revision));
  reply.set_continue_(result.continue_key);
  reply.set_remaining_item_count(result.remaining);
  for (const auto& e : result.items) reply.add_items(e->bytes);
  return reply;
}

absl::StatusOr<cache::WatchCache::ListResult> Registry::ListEntries(const ListRequest& req) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  MKUBE_ASSIGN_OR_RETURN(auto filter, MakeFilter(**kind, req.namespace_(), req.label_selector(),
                                                 req.field_selector()));
  int64_t min_rv = 0;
  if (req.resource_version().empty() && req.continue_().empty()) {
    // A consistent list: the cache must have caught up with the store's current revision.
    MKUBE_ASSIGN_OR_RETURN(auto head, store_->Get("/registry/"));
    min_rv = head.header().revision();
  } else if (req.resource_version() != "0" && !req.resource_version().empty() &&
             !ParseRevision(req.resource_version(), &min_rv)) {
    return absl::InvalidArgumentError(
        fmt::format("invalid resource version \"{}\"", req.resource_version()));
  }
  if (min_rv > 0) {
    MKUBE_RETURN_IF_ERROR(cache_->WaitFor(min_rv, kCacheWait));
  }
  return cache_->List(filter, req.limit(), req.continue_());
}

absl::Status Registry::NoSubresource(const api::KindInfo& kind, const std::string& sub) {
  return absl::NotFoundError(fmt::format("the server could not find the requested resource: {}/{}",
                                         kind.resource, sub));
}

absl::StatusOr<uint64_t> Registry::Watch(const WatchRequest& req, cache::WatchSinkPtr sink) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  MKUBE_ASSIGN_OR_RETURN(auto filter, MakeFilter(**kind, req.namespace_(), req.label_selector(),
                                                 req.field_selector()));
  int64_t from = 0;
  if (!req.resource_version().empty() && req.resource_version() != "0" &&
      !ParseRevision(req.resource_version(), &from)) {
    return absl::InvalidArgumentError(
        fmt::format("invalid resource version \"{}\"", req.resource_version()));
  }
  return cache_->Watch(std::move(filter), from, req.allow_bookmarks(), std::move(sink));
}

}  // namespace mkube::apiserver::registry
