#include "apiserver/rest/front.h"

#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "api/codec.h"
#include "api/object.h"
#include "apiserver/rest/deadlines.h"
#include "apiserver/rest/relays.h"
#include "apiserver/rest/discovery.h"
#include "apiserver/rest/openapi.h"
#include "apiserver/rest/protobuf.h"
#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::apiserver::rest {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& l = log::Logger("rest");
  return l;
}

using mkube::http::ExchangePtr;
using mkube::http::Request;
using mkube::http::Response;

// Kubernetes' verb for a request on a resource path; empty for a method it does not take.
std::string VerbOf(const std::string& method, const Target& t, bool watch) {
  if (method == "GET" || method == "HEAD") {
    if (t.name.empty()) return watch ? "watch" : "list";
    return "get";
  }
  if (method == "POST") return t.name.empty() || !t.subresource.empty() ? "create" : "";
  if (method == "PUT") return t.name.empty() ? "" : "update";
  if (method == "PATCH") return t.name.empty() ? "" : "patch";
  if (method == "DELETE") return t.name.empty() ? "deletecollection" : "delete";
  return "";
}

// The verb as apiserver_request_total names it.
std::string MetricVerb(const Front::Call& c) {
  if (c.verb == "list" || c.verb == "watch" || c.verb == "get") return absl::AsciiStrToUpper(c.verb);
  if (c.verb == "patch" && absl::StartsWith(c.req.Header("content-type"), "application/apply-patch")) {
    return "APPLY";
  }
  if (c.verb == "deletecollection") return "DELETECOLLECTION";
  return c.req.method;
}

std::string Scope(const Target& t) {
  if (!t.name.empty()) return "resource";
  return t.ns.empty() ? "cluster" : "namespace";
}

Json ApiGroup(const std::string& group) {
  for (const auto& g : ApiGroupList()["groups"]) {
    if (g["name"] == group) {
      Json out = {{"kind", "APIGroup"}, {"apiVersion", "v1"}};
      for (const auto& [k, v] : g.items()) out[k] = v;
      return out;
    }
  }
  return nullptr;
}

}  // namespace

Front::Front(registry::Registry* registry, const server::Gate* gate, server::SizedWrites* writes,
             server::MetricsApi* metrics_api, const server::PodTargets* pods,
             mkube::http::HealthChecks health, metrics::Registry* metrics, FrontOptions options)
    : registry_(registry),
      gate_(gate),
      writes_(writes),
      metrics_api_(metrics_api),
      pods_(pods),
      health_(std::move(health)),
      metrics_(metrics),
      options_(options),
      deadlines_(std::make_unique<Deadlines>()),
      relays_(std::make_unique<Relays>()),
      requests_(metrics),
      longrunning_(metrics->AddGauge(
          "apiserver_longrunning_requests",
          "Gauge of all active long-running apiserver requests broken out by verb, group, "
          "version, resource, scope and component.",
          {"verb", "group", "version", "resource", "subresource", "scope", "component"})),
      executor_(options.workers, options.max_waiting_requests) {}

Front::~Front() { Stop(); }

absl::StatusOr<registry::Caller> Front::Authenticate(const Request& req) const {
  const std::string& header = req.Header("authorization");
  if (!header.empty()) return gate_->Authenticate(std::string(header));
  if (!req.client_cn.empty()) {
    return registry::Caller{.user = req.client_cn, .groups = req.client_orgs};
  }
  return absl::UnauthenticatedError("Unauthorized");
}

void Front::Handle(Request req, ExchangePtr ex) {
  // What anyone may read, as Kubernetes' system:public-info-viewer: health and the version.
  // The readiness check asks the store: on a worker, not on this I/O thread.
  if (mkube::http::IsProbePath(req.path)) {
    auto probe = std::make_shared<Request>(std::move(req));
    if (!executor_.Run([this, probe, ex] {
          if (!ServeHealth(*probe, *ex, health_, *metrics_)) {
            ex->Finish(Refusal(405, "MethodNotAllowed", "probes are read with GET"));
          }
        })) {
      ex->Finish(StatusResponse(absl::ResourceExhaustedError("Too many requests, please try again later.")));
    }
    return;
  }
  if (req.path == "/version" || req.path == "/version/") {
    ex->Finish(JsonResponse(200, Version()));
    return;
  }
  auto caller = Authenticate(req);
  if (!caller.ok()) {
    ex->Finish(StatusResponse(absl::UnauthenticatedError("Unauthorized"), {}, 401));
    return;
  }
  if (!IsResourcePath(req.path)) {
    HandleNonResource(req, ex);
    return;
  }
  auto call = std::make_shared<Call>();
  call->start = std::chrono::steady_clock::now();
  call->caller = std::move(*caller);
  for (auto& [k, v] : mkube::http::ParseQuery(req.query)) call->query[k] = v;
  call->req = std::move(req);
  call->ex = std::move(ex);
  auto target = ParseTarget(call->req.path);
  if (!target.ok()) return Fail(*call, target.status());
  call->target = std::move(*target);
  call->verb = VerbOf(call->req.method, call->target, call->Flag("watch"));
  if (call->verb.empty()) {
    return Answer(*call, Refusal(405, "MethodNotAllowed",
                                 fmt::format("the server does not allow this method on the "
                                             "requested resource ({} {})",
                                             call->req.method, call->req.path)));
  }
  if (!executor_.Run([this, call] { Serve(call); })) {
    Fail(*call, absl::ResourceExhaustedError("Too many requests, please try again later."));
  }
}

void Front::HandleNonResource(const Request& req, const ExchangePtr& ex) {
  if (req.path == "/metrics") {
    if (!ServeHealth(req, *ex, health_, *metrics_)) ex->Finish(StatusResponse(NotServed()));
    return;
  }
  if (req.method != "GET" && req.method != "HEAD") {
    ex->Finish(Refusal(405, "MethodNotAllowed", "the server does not allow this method"));
    return;
  }
  const std::string& accept = req.Header("accept");
  std::string path = req.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  auto segs = Segments(path);
  if (path == "/api" || path == "/apis") {
    const bool core = path == "/api";
    // Aggregated discovery v2 when the client asks for it (kubectl does, first).
    if (absl::StrContains(accept, "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")) {
      ex->Finish(JsonResponse(200, AggregatedDiscovery(core), kAggregatedContentType));
    } else {
      ex->Finish(JsonResponse(200, core ? ApiVersions(std::string(req.Header("host")))
                                        : ApiGroupList()));
    }
    return;
  }
  if (segs.size() == 2 && segs[0] == "api") {
    const Json& list = ResourceList("", segs[1]);
    ex->Finish(list.is_null() ? StatusResponse(NotServed()) : JsonResponse(200, list));
    return;
  }
  if (segs.size() == 2 && segs[0] == "apis") {
    Json group = ApiGroup(segs[1]);
    ex->Finish(group.is_null() ? StatusResponse(NotServed()) : JsonResponse(200, group));
    return;
  }
  if (segs.size() == 3 && segs[0] == "apis") {
    const Json& list = ResourceList(segs[1], segs[2]);
    ex->Finish(list.is_null() ? StatusResponse(NotServed()) : JsonResponse(200, list));
    return;
  }
  if (!segs.empty() && segs[0] == "openapi") {
    ex->Finish(ServeOpenApi(path, req.query, req.Header("accept")));
    return;
  }
  ex->Finish(StatusResponse(NotServed()));
}

void Front::Serve(std::shared_ptr<Call> call) {
  Call& c = *call;
  const Target& t = c.target;
  if (!t.review.empty()) return Review(c);
  const std::string resource = t.kind->request_resource();
  // A stream to a pod's agent: exec, attach and portforward create (whatever the method, as
  // for a WebSocket's GET), log reads.
  const bool connect = t.subresource == "exec" || t.subresource == "attach" ||
                       t.subresource == "portforward";
  if (connect && (c.req.method == "GET" || c.req.method == "POST")) c.verb = "create";
  if (connect || t.subresource == "log") {
    if (!pods_) return Fail(c, NotServed());
    if (t.subresource == "log" && c.verb != "get") {
      return Answer(c, Refusal(405, "MethodNotAllowed", "pods/log is read with GET"));
    }
  }
  auth::Attributes a{c.verb == "deletecollection" ? "delete" : c.verb, resource, t.subresource,
                     t.ns, t.name, ""};
  if (c.verb == "create" && t.subresource.empty()) a.name.clear();
  if (c.verb != "update") {  // an update's is checked against the object it replaces
    if (auto st = gate_->Check(c.caller, a); !st.ok()) return Fail(c, st);
  }
  try {
    if (t.subresource == "log") return Logs(call);
    if (t.subresource == "portforward") return PortForward(call);
    if (connect) return RemoteCommandCall(call);
    if (c.verb == "get") return Get(c);
    if (c.verb == "list") return List(c);
    if (c.verb == "watch") return Watch(call);
    if (c.verb == "create") return t.subresource.empty() ? Create(c) : CreateSubresource(c);
    if (c.verb == "update") return Update(c);
    if (c.verb == "patch") return Patch(c);
    if (c.verb == "delete") return Delete(c);
    if (c.verb == "deletecollection") return DeleteCollection(c);
  } catch (const std::exception& e) {
    Log().error("{} {}: {}", c.req.method, c.req.path, e.what());
    return Fail(c, absl::InternalError(e.what()));
  }
  Fail(c, absl::UnimplementedError("the server does not allow this method on the requested resource"));
}

void Front::Answer(Call& call, Response r) {
  for (const auto& w : call.warnings) {
    r.headers.emplace_back("Warning", "299 - " + Json(w).dump());
  }
  Record(call, r.status);
  call.ex->Finish(std::move(r));
}

void Front::Fail(Call& call, const absl::Status& st) {
  Answer(call, StatusResponse(st, {call.target.kind, call.target.name}));
}

void Front::Record(const Call& c, int code) {
  const Target& t = c.target;
  const server::RequestMetrics::Labels labels{
      .verb = MetricVerb(c),
      .dry_run = !c.Param("dryRun").empty(),
      .group = t.group,
      .version = t.version,
      .resource = t.kind ? t.kind->resource : t.review,
      .subresource = t.subresource,
      .scope = Scope(t)};
  std::optional<double> seconds;
  // A watch is long-running: its duration says nothing of latency.
  if (c.verb != "watch") {
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
  }
  requests_.Record(labels, code, seconds);
}

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> Front::DecodeBody(Call& c) const {
  MKUBE_ASSIGN_OR_RETURN(const FieldValidation validation, FieldValidationOf(c));
  const api::KindInfo& kind = *c.target.kind;
  const std::string& type = c.req.Header("content-type");
  if (!ReadableBody(type)) {
    return absl::UnimplementedError(fmt::format(
        "the body of the request was in an unknown format ({}) - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
        type));
  }
  std::string text = c.req.body;
  if (absl::StartsWith(type, "application/vnd.kubernetes.protobuf")) {
    // kubectl's typed clients (create deployment, create namespace, ...) send protobuf.
    auto object = UnwrapProtobuf(c.req.body);
    if (!object.ok()) return object.status();
    auto json = ObjectJsonFromProtobuf(object->raw, kind.prototype->GetDescriptor());
    if (!json.ok()) return json.status();
    (*json)["apiVersion"] = object->api_version;
    (*json)["kind"] = object->kind;
    text = json->dump();
  }
  MKUBE_ASSIGN_OR_RETURN(YAML::Node doc, LoadBody(text));
  if (!doc["apiVersion"]) doc["apiVersion"] = kind.api_version();
  if (!doc["kind"]) doc["kind"] = kind.kind;
  std::vector<std::string> unknown;
  auto obj = api::DecodeObject(doc, validation == FieldValidation::kStrict ? nullptr : &unknown);
  if (validation == FieldValidation::kWarn) {
    for (const auto& f : unknown) c.warnings.push_back(UnknownField(f));
  }
  if (!obj.ok()) {
    std::string msg(obj.status().message());
    if (size_t at = msg.find("unknown field"); at != std::string::npos) {
      return absl::InvalidArgumentError(fmt::format("strict decoding error: {}", msg.substr(at)));
    }
    return absl::InvalidArgumentError(fmt::format(
        "{} in version \"{}\" cannot be handled as a {}: {}", kind.kind, kind.version, kind.kind,
        msg));
  }
  if (obj->info != &kind) {
    return absl::InvalidArgumentError(fmt::format(
        "the object provided is unrecognized as {}: the body holds a {} ({})", kind.kind,
        doc["kind"].as<std::string>(), doc["apiVersion"].as<std::string>()));
  }
  api::ObjectMeta* meta = api::MutableMetaOf(obj->message.get());
  if (kind.namespaced) {
    if (meta->namespace_().empty()) meta->set_namespace_(c.target.ns);
    if (meta->namespace_() != c.target.ns && !c.target.ns.empty()) {
      return absl::InvalidArgumentError(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
  }
  if (!c.target.name.empty() && meta->name() != c.target.name && !meta->name().empty()) {
    return absl::InvalidArgumentError(
        fmt::format("the name of the object ({}) does not match the name on the URL ({})",
                    meta->name(), c.target.name));
  }
  if (!c.target.name.empty() && meta->name().empty()) meta->set_name(c.target.name);
  return std::move(obj->message);
}

std::string UnknownField(const std::string& path) {
  return fmt::format("unknown field \"{}\"", path);
}

absl::StatusOr<FieldValidation> FieldValidationOf(const Front::Call& c) {
  const std::string v = c.Param("fieldValidation");
  if (v.empty() || v == "Warn") return FieldValidation::kWarn;
  if (v == "Strict") return FieldValidation::kStrict;
  if (v == "Ignore") return FieldValidation::kIgnore;
  return absl::InvalidArgumentError(fmt::format(
      "fieldValidation: Unsupported value: \"{}\": supported values: \"Ignore\", \"Strict\", "
      "\"Warn\"",
      v));
}

}  // namespace mkube::apiserver::rest
