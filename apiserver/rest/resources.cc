// The verbs of the Kubernetes API on the registry: get, list, create, update, patch, delete,
// deletecollection, the subresources that create (binding, eviction) and the reviews.
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "base/status.h"
#include "api/codec.h"
#include "api/object.h"
#include "api/patch.h"
#include "apiserver/rest/front.h"
#include "apiserver/rest/patch_fields.h"
#include "apiserver/rest/protobuf.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::apiserver::rest {
namespace {

using mkube::http::Response;

bool DryRun(const Front::Call& c) { return !c.Param("dryRun").empty(); }

// A body the front could not read: 400 BadRequest, or 415 for a content type it does not take.
Response BadBody(const absl::Status& st) {
  if (st.code() == absl::StatusCode::kUnimplemented) {
    return Refusal(415, "UnsupportedMediaType", std::string(st.message()));
  }
  return Refusal(400, "BadRequest", std::string(st.message()));
}

// A patch the registry could not even read is the request's fault (400), before it is sent;
// what a well-formed patch makes of the object is the registry's to judge (422).
absl::Status CheckPatchSyntax(api::PatchType type, const std::string& body) {
  if (type == api::PatchType::kApply) return LoadBody(body).status();
  const Json patch = Json::parse(body, nullptr, false);
  if (patch.is_discarded()) return absl::InvalidArgumentError("the patch is not valid JSON");
  if (type == api::PatchType::kJson) {
    return patch.is_array() ? absl::OkStatus()
                            : absl::InvalidArgumentError("a json patch must be a list of operations");
  }
  return patch.is_object() ? absl::OkStatus()
                           : absl::InvalidArgumentError("a merge patch must be a JSON object");
}

// A write's answer: the object (or the Scale, for the scale subresource) as JSON.
absl::StatusOr<Json> WrittenJson(const Target& t, const std::string& bytes) {
  if (t.subresource == "scale") {
    api::Scale scale;
    if (!scale.ParseFromString(bytes)) return absl::InternalError("cannot decode the Scale");
    return TypedJson("autoscaling/v1", "Scale", scale);
  }
  return ObjectJson(*t.kind, bytes);
}

// Who a write's changes are recorded for in managedFields: the fieldManager asked for, else
// the client's name from its User-Agent ("kubectl/v1.32.0 (linux/amd64) ..." → "kubectl"), as
// Kubernetes does.
std::string FieldManager(const Front::Call& c) {
  std::string m = c.Param("fieldManager");
  if (!m.empty()) return m;
  const std::string& agent = c.req.Header("user-agent");
  m = agent.substr(0, agent.find('/'));
  return m.empty() ? "unknown" : m;
}

// A list of decoded objects (a deletecollection's, metrics'), encoded on each request.
template <typename Items>
Json ListJson(const api::KindInfo& k, const Items& items, const std::string& resource_version) {
  Json list = Json::array();
  for (const auto& m : items) list.push_back(ObjectJson(k, *m));
  return {{"kind", k.kind + "List"},
          {"apiVersion", k.api_version()},
          {"metadata", {{"resourceVersion", resource_version}}},
          {"items", std::move(list)}};
}

// A list as JSON text: the objects' texts, made once per object for every list and watch,
// joined into it.
std::string ListText(const api::KindInfo& k, const cache::WatchCache::ListResult& list) {
  Json metadata = {{"resourceVersion", std::to_string(list.revision)}};
  if (!list.continue_key.empty()) {
    metadata["continue"] = list.continue_key;
    if (list.remaining > 0) metadata["remainingItemCount"] = list.remaining;
  }
  std::vector<const std::string*> texts;
  texts.reserve(list.items.size());
  size_t size = 256;
  for (const auto& e : list.items) {
    texts.push_back(&ObjectText(*e));
    size += texts.back()->size() + 1;
  }
  std::string out;
  out.reserve(size);
  out += fmt::format(R"({{"kind":{},"apiVersion":{},"metadata":{},"items":[)",
                     Json(k.kind + "List").dump(), Json(k.api_version()).dump(), metadata.dump());
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i > 0) out += ',';
    out += *texts[i];
  }
  out += "]}";
  return out;
}

// DeleteOptions from the body (JSON; a protobuf one, as kubectl's drain may send, is taken
// as the defaults it always is) and the query.
absl::Status ReadDeleteOptions(const Front::Call& c, DeleteRequest* r) {
  const std::string& type = c.req.Header("content-type");
  if (!c.req.body.empty() && !absl::StartsWith(type, "application/vnd.kubernetes.protobuf")) {
    Json o = Json::parse(c.req.body, nullptr, false);
    if (o.is_discarded() || !o.is_object()) {
      return absl::InvalidArgumentError("the DeleteOptions in the body are not a JSON object");
    }
    if (o.contains("gracePeriodSeconds") && o["gracePeriodSeconds"].is_number_integer()) {
      r->set_grace_period_seconds(o["gracePeriodSeconds"].get<int64_t>());
    }
    if (o.contains("propagationPolicy") && o["propagationPolicy"].is_string()) {
      r->set_propagation_policy(o["propagationPolicy"].get<std::string>());
    }
    if (o.value("orphanDependents", false)) r->set_propagation_policy("Orphan");
    if (o.contains("preconditions") && o["preconditions"].is_object()) {
      const Json& p = o["preconditions"];
      if (p.contains("uid") && p["uid"].is_string()) {
        r->mutable_preconditions()->set_uid(p["uid"].get<std::string>());
      }
      if (p.contains("resourceVersion") && p["resourceVersion"].is_string()) {
        r->mutable_preconditions()->set_resource_version(p["resourceVersion"].get<std::string>());
      }
    }
    if (o.contains("dryRun") && o["dryRun"].is_array() && !o["dryRun"].empty()) r->set_dry_run(true);
  }
  if (std::string g = c.Param("gracePeriodSeconds"); !g.empty()) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(g, &v)) {
      return absl::InvalidArgumentError(fmt::format("gracePeriodSeconds: invalid value \"{}\"", g));
    }
    r->set_grace_period_seconds(v);
  }
  if (std::string p = c.Param("propagationPolicy"); !p.empty()) r->set_propagation_policy(p);
  if (DryRun(c)) r->set_dry_run(true);
  return absl::OkStatus();
}

}  // namespace

void Front::Written(Call& c, absl::StatusOr<std::string> bytes, int code) {
  if (!bytes.ok()) return Fail(c, bytes.status());
  auto out = WrittenJson(c.target, *bytes);
  if (!out.ok()) return Fail(c, out.status());
  Answer(c, JsonResponse(code, *out));
}

void Front::Get(Call& c) {
  const Target& t = c.target;
  const api::KindInfo& k = *t.kind;
  absl::StatusOr<std::string> bytes;
  if (k.measured) {
    if (!metrics_api_) return Fail(c, NotServed());
    bytes = metrics_api_->Get(k, t.ns, t.name);
  } else {
    GetRequest g;
    g.set_resource(k.request_resource());
    g.set_namespace_(t.ns);
    g.set_name(t.name);
    g.set_subresource(t.subresource);
    bytes = registry_->Get(g);
  }
  if (!bytes.ok()) return Fail(c, bytes.status());
  if (t.subresource == "scale") return Written(c, std::move(bytes), 200);
  auto obj = k.New();
  if (!obj->ParseFromString(*bytes)) return Fail(c, absl::InternalError("cannot decode the stored object"));
  if (WantsTable(c.req.Header("accept"))) {
    return Answer(c, JsonResponse(200, TableJson(k, {obj.get()}, api::MetaOf(*obj).resource_version())));
  }
  Answer(c, JsonResponse(200, ObjectJson(k, *obj)));
}

void Front::List(Call& c) {
  const Target& t = c.target;
  const api::KindInfo& k = *t.kind;
  ListRequest r;
  r.set_resource(k.request_resource());
  r.set_namespace_(t.ns);
  r.set_label_selector(c.Param("labelSelector"));
  r.set_field_selector(c.Param("fieldSelector"));
  r.set_continue_(c.Param("continue"));
  r.set_resource_version(c.Param("resourceVersion"));
  if (std::string limit = c.Param("limit"); !limit.empty()) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(limit, &n) || n < 0) {
      return Answer(c, Refusal(400, "BadRequest", fmt::format("limit: invalid value \"{}\"", limit)));
    }
    r.set_limit(n);
  }
  if (k.measured) return ListMeasured(c, r);
  auto list = registry_->ListEntries(r);
  if (!list.ok()) return Fail(c, list.status());
  if (WantsTable(c.req.Header("accept"))) {
    std::vector<const google::protobuf::Message*> objects;
    objects.reserve(list->items.size());
    for (const auto& e : list->items) objects.push_back(e->object.get());
    return Answer(c, JsonResponse(200, TableJson(k, objects, std::to_string(list->revision),
                                                 list->continue_key)));
  }
  Answer(c, {.status = 200, .body = ListText(k, *list)});
}

// metrics.k8s.io's lists, made from the agents' figures on each request.
void Front::ListMeasured(Call& c, const ListRequest& r) {
  const api::KindInfo& k = *c.target.kind;
  if (!metrics_api_) return Fail(c, NotServed());
  auto reply = metrics_api_->List(k, r);
  if (!reply.ok()) return Fail(c, reply.status());
  std::vector<std::unique_ptr<google::protobuf::Message>> items;
  std::vector<const google::protobuf::Message*> objects;
  for (const auto& b : reply->items()) {
    auto m = k.New();
    if (!m->ParseFromString(b)) return Fail(c, absl::InternalError("cannot decode a measured object"));
    objects.push_back(m.get());
    items.push_back(std::move(m));
  }
  if (WantsTable(c.req.Header("accept"))) {
    return Answer(c, JsonResponse(200, TableJson(k, objects, reply->resource_version())));
  }
  Answer(c, JsonResponse(200, ListJson(k, objects, reply->resource_version())));
}

void Front::Create(Call& c) {
  auto obj = DecodeBody(c);
  if (!obj.ok()) return Answer(c, BadBody(obj.status()));
  CreateRequest r;
  r.set_resource(c.target.kind->request_resource());
  r.set_namespace_(api::MetaOf(**obj).namespace_());
  r.set_object((*obj)->SerializeAsString());
  r.set_dry_run(DryRun(c));
  r.set_field_manager(FieldManager(c));
  r.set_applied(c.verb == "patch");  // a server-side apply of an object that did not exist
  Written(c, writes_->Create(r), 201);
}

void Front::Update(Call& c) {
  const Target& t = c.target;
  UpdateRequest r;
  r.set_resource(t.kind->request_resource());
  r.set_namespace_(t.ns);
  r.set_subresource(t.subresource);
  r.set_dry_run(DryRun(c));
  r.set_field_manager(FieldManager(c));
  if (t.subresource == "scale") {
    api::Scale scale;
    if (auto st = DecodeMessage(c.req.body, &scale); !st.ok()) return Answer(c, BadBody(st));
    if (scale.metadata().name().empty()) scale.mutable_metadata()->set_name(t.name);
    if (scale.metadata().namespace_().empty()) scale.mutable_metadata()->set_namespace_(t.ns);
    r.set_object(scale.SerializeAsString());
  } else {
    auto obj = DecodeBody(c);
    if (!obj.ok()) return Answer(c, BadBody(obj.status()));
    r.set_object((*obj)->SerializeAsString());
  }
  auto admit = gate_->CheckUpdate(
      c.caller, {"update", t.kind->request_resource(), t.subresource, t.ns, t.name, ""});
  if (!admit.ok()) return Fail(c, admit.status());
  Written(c, writes_->Update(r, std::move(*admit)), 200);
}

void Front::Patch(Call& c) {
  const Target& t = c.target;
  auto type = api::PatchTypeOf(c.req.Header("content-type"));
  if (!type) {
    return Answer(c, Refusal(415, "UnsupportedMediaType",
                             fmt::format("the body of the request was in an unknown format - "
                                         "accepted media types include: "
                                         "application/json-patch+json, application/merge-patch+json, "
                                         "application/apply-patch+yaml, "
                                         "application/strategic-merge-patch+json")));
  }
  if (auto st = CheckPatchSyntax(*type, c.req.body); !st.ok()) {
    return Answer(c, Refusal(400, "BadRequest", std::string(st.message())));
  }
  const bool apply = *type == api::PatchType::kApply;
  auto body = PatchBody(c, *type);
  if (!body.ok()) return Answer(c, BadBody(body.status()));
  if (apply && c.Param("fieldManager").empty()) {
    return Fail(c, absl::InvalidArgumentError(
                       "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                       "is required for apply patch"));
  }
  PatchRequest r;
  r.set_resource(t.kind->request_resource());
  r.set_namespace_(t.ns);
  r.set_name(t.name);
  r.set_subresource(t.subresource);
  r.set_merge_patch(*body);
  r.set_patch_type(api::PatchTypeName(*type));
  r.set_dry_run(DryRun(c));
  r.set_field_manager(FieldManager(c));
  r.set_force(c.Flag("force"));
  auto bytes = writes_->Patch(r);
  if (!bytes.ok() && apply && t.subresource.empty() &&
      bytes.status().code() == absl::StatusCode::kNotFound) {
    // Server-side apply of an object that does not exist creates it.
    if (auto st = gate_->Check(c.caller, {"create", t.kind->request_resource(), "", t.ns, t.name, ""});
        !st.ok()) {
      return Fail(c, st);
    }
    c.warnings.clear();  // the create warns again of the same fields
    return Create(c);
  }
  Written(c, std::move(bytes), 200);
}

void Front::Delete(Call& c) {
  const Target& t = c.target;
  DeleteRequest r;
  r.set_resource(t.kind->request_resource());
  r.set_namespace_(t.ns);
  r.set_name(t.name);
  if (auto st = ReadDeleteOptions(c, &r); !st.ok()) return Answer(c, BadBody(st));
  Written(c, registry_->Delete(r), 200);
}

void Front::DeleteCollection(Call& c) {
  const Target& t = c.target;
  const api::KindInfo& k = *t.kind;
  DeleteRequest options;
  if (auto st = ReadDeleteOptions(c, &options); !st.ok()) return Answer(c, BadBody(st));
  ListRequest lr;
  lr.set_resource(k.request_resource());
  lr.set_namespace_(t.ns);
  lr.set_label_selector(c.Param("labelSelector"));
  lr.set_field_selector(c.Param("fieldSelector"));
  auto listed = registry_->List(lr);
  if (!listed.ok()) return Fail(c, listed.status());
  std::vector<std::unique_ptr<google::protobuf::Message>> deleted;
  for (const auto& b : listed->items()) {
    auto m = k.New();
    if (!m->ParseFromString(b)) continue;
    DeleteRequest r = options;
    r.set_resource(k.request_resource());
    r.set_namespace_(api::MetaOf(*m).namespace_());
    r.set_name(api::MetaOf(*m).name());
    auto bytes = registry_->Delete(r);
    if (!bytes.ok() && bytes.status().code() != absl::StatusCode::kNotFound) {
      return Fail(c, bytes.status());
    }
    if (bytes.ok()) {
      auto d = k.New();
      if (d->ParseFromString(*bytes)) deleted.push_back(std::move(d));
    }
  }
  Answer(c, JsonResponse(200, ListJson(k, deleted, listed->resource_version())));
}

void Front::CreateSubresource(Call& c) {
  const Target& t = c.target;
  CreateRequest r;
  r.set_resource(t.kind->request_resource());
  r.set_namespace_(t.ns);
  r.set_name(t.name);
  r.set_subresource(t.subresource);
  r.set_dry_run(DryRun(c));
  std::unique_ptr<google::protobuf::Message> body;
  if (t.subresource == "eviction") {
    body = std::make_unique<api::Eviction>();
  } else if (t.subresource == "binding") {
    body = std::make_unique<api::Binding>();
  } else {
    return Answer(c, Refusal(405, "MethodNotAllowed",
                             fmt::format("the server does not allow this method on {}/{}",
                                         t.kind->resource, t.subresource)));
  }
  if (auto st = DecodeMessage(c.req.body, body.get()); !st.ok()) return Answer(c, BadBody(st));
  api::ObjectMeta* meta = api::MutableMetaOf(body.get());
  if (meta->name().empty()) meta->set_name(t.name);
  if (meta->namespace_().empty()) meta->set_namespace_(t.ns);
  if (meta->name() != t.name) {
    return Answer(c, Refusal(400, "BadRequest",
                             fmt::format("name in URL does not match name in {} object",
                                         body->GetDescriptor()->name())));
  }
  r.set_object(body->SerializeAsString());
  auto done = writes_->Create(r);
  if (!done.ok()) return Fail(c, done.status());
  Answer(c, JsonResponse(201, SuccessJson(201)));
}

void Front::Review(Call& c) {
  if (c.req.method != "POST") {
    return Answer(c, Refusal(405, "MethodNotAllowed", "reviews are only created"));
  }
  Json groups = c.caller.groups;
  if (std::find(c.caller.groups.begin(), c.caller.groups.end(), "system:authenticated") ==
      c.caller.groups.end()) {
    groups.push_back("system:authenticated");
  }
  if (c.target.review == "selfsubjectreviews") {
    Json out = {{"kind", "SelfSubjectReview"},
                {"apiVersion", "authentication.k8s.io/v1"},
                {"metadata", {{"creationTimestamp", nullptr}}},
                {"status", {{"userInfo", {{"username", c.caller.user}, {"groups", groups}}}}}};
    return Answer(c, JsonResponse(201, out));
  }
  Json spec;
  if (absl::StartsWith(c.req.Header("content-type"), "application/vnd.kubernetes.protobuf")) {
    auto object = UnwrapProtobuf(c.req.body);
    auto decoded = object.ok() ? AccessReviewSpecFromProtobuf(object->raw)
                               : absl::StatusOr<Json>(object.status());
    if (!decoded.ok()) {
      return Answer(c, Refusal(400, "BadRequest", std::string(decoded.status().message())));
    }
    spec = std::move(*decoded);
  } else {
    Json body = Json::parse(c.req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return Answer(c, Refusal(400, "BadRequest", "the request body is not a JSON object"));
    }
    spec = body.value("spec", Json::object());
  }
  bool allowed = false;
  std::string reason;
  if (spec.contains("resourceAttributes")) {
    const Json& ra = spec["resourceAttributes"];
    auth::Attributes a;
    a.verb = ra.value("verb", "");
    a.resource = ra.value("resource", "");
    a.subresource = ra.value("subresource", "");
    a.ns = ra.value("namespace", "");
    a.name = ra.value("name", "");
    // "*" for the verb or the resource ("can-i '*' '*'") is allowed only to who may do
    // anything: the rules name no wildcard.
    absl::Status st = gate_->Check(c.caller, a);
    allowed = st.ok();
    if (!allowed) reason = std::string(st.message());
  } else {
    // Non-resource paths (discovery, /version, /healthz): every authenticated user.
    allowed = true;
  }
  Json status = {{"allowed", allowed}};
  if (!reason.empty()) status["reason"] = reason;
  Json out = {{"kind", "SelfSubjectAccessReview"},
              {"apiVersion", "authorization.k8s.io/v1"},
              {"metadata", {{"creationTimestamp", nullptr}}},
              {"spec", spec},
              {"status", status}};
  Answer(c, JsonResponse(201, out));
}

}  // namespace mkube::apiserver::rest
