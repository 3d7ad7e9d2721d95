#include "apiserver/rest/openapi.h"

#include <map>
#include <set>

#include "absl/strings/match.h"
#include "api/kinds.h"
#include "api/patch.h"
#include "apiserver/rest/discovery.h"
#include "apiserver/rest/encoding.h"
#include "fmt/format.h"
#include "google/protobuf/descriptor.h"

namespace mkube::apiserver::rest {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// Kubernetes' schema names: io.k8s.api.core.v1.PodSpec, io.k8s.apimachinery.pkg.apis.meta.v1.
// ObjectMeta, ... by the .proto file a message comes from.
std::string SchemaName(const Descriptor* d) {
  const std::string& file = d->file()->name();
  std::string group = "core";
  if (absl::EndsWith(file, "apps.proto")) group = "apps";
  if (absl::EndsWith(file, "batch.proto")) group = "batch";
  if (absl::EndsWith(file, "metrics.proto")) return "io.k8s.metrics.pkg.apis.metrics.v1beta1." + d->name();
  if (absl::EndsWith(file, "meta.proto")) {
    if (d->name() == "IntOrString") return "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
    return "io.k8s.apimachinery.pkg.apis.meta.v1." + d->name();
  }
  return fmt::format("io.k8s.api.{}.v1.{}", group, d->name());
}

class SchemaBuilder {
 public:
  // The schema of `d` and of every message it reaches, into `schemas`.
  void Add(const Descriptor* d) {
    const std::string name = SchemaName(d);
    if (schemas_.contains(name)) return;
    schemas_[name] = nullptr;  // reserved: recursion stops here
    Json props = Json::object();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      props[f->json_name()] = Field(f);
    }
    Json s = {{"type", "object"}, {"properties", std::move(props)}};
    if (d->name() == "IntOrString") {
      s = {{"type", "string"}, {"format", "int-or-string"}, {"x-kubernetes-int-or-string", true}};
    }
    if (d->name() == "FieldsV1") {
      s = {{"description", "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format."},
           {"type", "object"}};
    }
    schemas_[name] = std::move(s);
  }

  Json& schemas() { return schemas_; }

 private:
  Json Scalar(const FieldDescriptor* f) {
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        return f->type() == FieldDescriptor::TYPE_BYTES ? Json{{"type", "string"}, {"format", "byte"}}
                                                        : Json{{"type", "string"}};
      case FieldDescriptor::CPPTYPE_BOOL: return {{"type", "boolean"}};
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_UINT32: return {{"type", "integer"}, {"format", "int32"}};
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT64: return {{"type", "integer"}, {"format", "int64"}};
      case FieldDescriptor::CPPTYPE_FLOAT:
      case FieldDescriptor::CPPTYPE_DOUBLE: return {{"type", "number"}, {"format", "double"}};
      case FieldDescriptor::CPPTYPE_ENUM: return {{"type", "string"}};
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        Add(f->message_type());
        return {{"allOf", {{{"$ref", "#/components/schemas/" + SchemaName(f->message_type())}}}}};
      }
    }
    return Json::object();
  }

  Json Field(const FieldDescriptor* f) {
    if (f->is_map()) {
      return {{"type", "object"}, {"additionalProperties", Scalar(f->message_type()->map_value())}};
    }
    if (!f->is_repeated()) return Scalar(f);
    Json s = {{"type", "array"}, {"items", Scalar(f)}};
    const bool service_port = f->message_type() && f->message_type()->FindFieldByName("container_port") == nullptr &&
                              f->message_type()->FindFieldByName("port") != nullptr;
    if (auto key = api::MergeKeyOf(f->json_name(), service_port); key && f->message_type()) {
      s["x-kubernetes-patch-merge-key"] = *key;
      s["x-kubernetes-patch-strategy"] = "merge";
      s["x-kubernetes-list-type"] = "map";
      s["x-kubernetes-list-map-keys"] = {*key};
    } else if (f->json_name() == "finalizers") {
      s["x-kubernetes-patch-strategy"] = "merge";
      s["x-kubernetes-list-type"] = "set";
    } else {
      s["x-kubernetes-list-type"] = "atomic";
    }
    return s;
  }

  Json schemas_ = Json::object();
};

Json Gvk(const api::KindInfo& k) {
  return {{"group", k.group}, {"version", k.version}, {"kind", k.kind}};
}

Json Param(const std::string& name, const std::string& in, bool required = false) {
  return {{"name", name}, {"in", in}, {"required", required}, {"schema", {{"type", "string"}}}};
}

Json Operation(const api::KindInfo& k, const std::string& id, const std::string& ref,
               bool body, std::vector<std::string> query) {
  Json params = Json::array();
  for (const auto& q : query) params.push_back(Param(q, "query"));
  Json op = {{"operationId", id},
             {"x-kubernetes-group-version-kind", Gvk(k)},
             {"parameters", std::move(params)},
             {"responses",
              {{"200",
                {{"description", "OK"},
                 {"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}}}}}}};
  if (body) {
    op["requestBody"] = {{"content", {{"*/*", {{"schema", {{"$ref", ref}}}}}}}, {"required", true}};
  }
  return op;
}

Json GroupVersionDoc(const std::string& group, const std::string& version) {
  SchemaBuilder schemas;
  Json paths = Json::object();
  const std::vector<std::string> writes = {"dryRun", "fieldManager", "fieldValidation", "pretty"};
  std::vector<std::string> patch_params = writes;
  patch_params.push_back("force");
  for (const auto& k : api::Kinds()) {
    if (k.group != group || k.version != version) continue;
    schemas.Add(k.prototype->GetDescriptor());
    const std::string name = SchemaName(k.prototype->GetDescriptor());
    schemas.schemas()[name]["x-kubernetes-group-version-kind"] = Json::array({Gvk(k)});
    const std::string ref = "#/components/schemas/" + name;
    const std::string base = (group.empty() ? "/api/" + version : "/apis/" + group + "/" + version) +
                             (k.namespaced ? "/namespaces/{namespace}/" : "/") + k.resource;
    const std::string id = k.kind;
    Json collection = {{"get", Operation(k, "list" + id, ref, false,
                                         {"labelSelector", "fieldSelector", "limit", "continue",
                                          "resourceVersion", "watch", "timeoutSeconds"})}};
    Json item = {{"get", Operation(k, "read" + id, ref, false, {"pretty"})}};
    if (!k.measured) {
      collection["post"] = Operation(k, "create" + id, ref, true, writes);
      collection["delete"] = Operation(k, "deletecollection" + id, ref, false,
                                       {"labelSelector", "fieldSelector", "gracePeriodSeconds",
                                        "propagationPolicy", "dryRun"});
      item["put"] = Operation(k, "replace" + id, ref, true, writes);
      item["patch"] = Operation(k, "patch" + id, ref, true, patch_params);
      item["delete"] = Operation(k, "delete" + id, ref, false,
                                 {"gracePeriodSeconds", "propagationPolicy", "dryRun"});
    }
    Json name_param = Json::array({Param("name", "path", true)});
    if (k.namespaced) name_param.push_back(Param("namespace", "path", true));
    item["parameters"] = name_param;
    if (k.namespaced) collection["parameters"] = Json::array({Param("namespace", "path", true)});
    paths[base] = std::move(collection);
    paths[base + "/{name}"] = std::move(item);
  }
  if (paths.empty()) return nullptr;
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes"}, {"version", kKubernetesGitVersion}}},
          {"paths", std::move(paths)},
          {"components", {{"schemas", std::move(schemas.schemas())}}}};
}

std::vector<std::pair<std::string, std::string>> GroupVersions() {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& k : api::Kinds()) {
    if (seen.insert({k.group, k.version}).second) out.emplace_back(k.group, k.version);
  }
  return out;
}

std::string DocPath(const std::string& group, const std::string& version) {
  return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
}

// The documents, made once: by path ("api/v1"), text and hash.
struct Docs {
  std::map<std::string, std::string> text;
  std::map<std::string, std::string> hash;
  std::string index;
  std::string v2;
};

const Docs& AllDocs() {
  static const Docs* docs = [] {
    auto* d = new Docs();
    Json index = {{"paths", Json::object()}};
    Json v2_paths = Json::object();
    Json v2_defs = Json::object();
    for (const auto& [g, v] : GroupVersions()) {
      Json doc = GroupVersionDoc(g, v);
      const std::string path = DocPath(g, v);
      std::string text = doc.dump();
      const std::string hash = fmt::format("{:016X}", std::hash<std::string>{}(text));
      index["paths"][path] = {{"serverRelativeURL", "/openapi/v3/" + path + "?hash=" + hash}};
      for (auto& [p, ops] : doc["paths"].items()) v2_paths[p] = ops;
      for (auto& [n, s] : doc["components"]["schemas"].items()) v2_defs[n] = s;
      d->text[path] = std::move(text);
      d->hash[path] = hash;
    }
    d->index = index.dump();
    // Swagger 2.0 holds the same schemas under definitions.
    std::string defs = v2_defs.dump();
    for (size_t at = 0; (at = defs.find("#/components/schemas/", at)) != std::string::npos;) {
      defs.replace(at, 21, "#/definitions/");
    }
    Json v2 = {{"swagger", "2.0"},
               {"info", {{"title", "Kubernetes"}, {"version", kKubernetesGitVersion}}},
               {"paths", Json::object()},
               {"definitions", Json::parse(defs)}};
    d->v2 = v2.dump();
    return d;
  }();
  return *docs;
}

}  // namespace

mkube::http::Response ServeOpenApi(const std::string& path, const std::string& query,
                                   const std::string& accept) {
  const Docs& docs = AllDocs();
  if (path == "/openapi/v3") return {.body = docs.index};
  if (path == "/openapi/v2") {
    // kubectl asks for the protobuf form only, and does without it on 404.
    if (!accept.empty() && !absl::StrContains(accept, "json") && !absl::StrContains(accept, "*/*")) {
      return StatusResponse(NotServed());
    }
    return {.body = docs.v2};
  }
  const std::string prefix = "/openapi/v3/";
  if (absl::StartsWith(path, prefix)) {
    auto it = docs.text.find(path.substr(prefix.size()));
    if (it != docs.text.end()) {
      mkube::http::Response r{.body = it->second};
      // A request naming the current hash may be cached for good, as Kubernetes allows.
      if (absl::StrContains(query, "hash=" + docs.hash.at(it->first))) {
        r.headers.emplace_back("Cache-Control", "public, immutable");
      }
      return r;
    }
  }
  return StatusResponse(NotServed());
}

}  // namespace mkube::apiserver::rest
