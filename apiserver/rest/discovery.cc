#include "apiserver/rest/discovery.h"

#include <algorithm>
#include <map>
#include <set>

namespace mkube::apiserver::rest {
namespace {

// The groups served, in the order /apis lists them, each with its one version.
std::vector<std::pair<std::string, std::string>> Groups() {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& g, const std::string& v) {
    if (!g.empty() && seen.insert(g).second) out.emplace_back(g, v);
  };
  for (const auto& k : api::Kinds()) add(k.group, k.version);
  for (const auto& r : Reviews()) add(r.group, r.version);
  return out;
}

bool InAllCategory(const api::KindInfo& k) {
  const auto& all = api::AllCategory();
  return std::find(all.begin(), all.end(), &k) != all.end();
}

Json ResourceEntry(const api::KindInfo& k) {
  Json r = {{"name", k.resource},
            {"singularName", k.singular},
            {"namespaced", k.namespaced},
            {"kind", k.kind},
            {"verbs", VerbsOf(k)}};
  if (!k.short_names.empty()) r["shortNames"] = k.short_names;
  if (InAllCategory(k)) r["categories"] = {"all"};
  return r;
}

Json AggregatedResource(const api::KindInfo& k) {
  Json r = {{"resource", k.resource},
            {"responseKind", {{"group", k.group}, {"version", k.version}, {"kind", k.kind}}},
            {"scope", k.namespaced ? "Namespaced" : "Cluster"},
            {"singularResource", k.singular},
            {"verbs", VerbsOf(k)}};
  if (!k.short_names.empty()) r["shortNames"] = k.short_names;
  if (InAllCategory(k)) r["categories"] = {"all"};
  Json subs = Json::array();
  for (const auto& s : SubresourcesOf(k)) {
    subs.push_back({{"subresource", s.name},
                    {"responseKind", {{"group", s.group}, {"version", s.version}, {"kind", s.kind}}},
                    {"verbs", s.verbs}});
  }
  if (!subs.empty()) r["subresources"] = std::move(subs);
  return r;
}

Json GroupVersionRef(const std::string& g, const std::string& v) {
  return {{"groupVersion", g + "/" + v}, {"version", v}};
}

}  // namespace

const std::vector<Review>& Reviews() {
  static const auto* reviews = new std::vector<Review>{
      {"authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview"},
      {"authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview"},
  };
  return *reviews;
}

std::vector<std::string> VerbsOf(const api::KindInfo& kind) {
  if (kind.measured) return {"get", "list"};
  return {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
}

std::vector<Subresource> SubresourcesOf(const api::KindInfo& k) {
  if (k.measured) return {};
  const std::vector<std::string> rw = {"get", "patch", "update"};
  std::vector<Subresource> out;
  if (k.resource != "events" && k.resource != "leases") {
    out.push_back({"status", k.group, k.version, k.kind, rw});
  }
  if (k.resource == "pods") {
    out.push_back({"binding", "", "v1", "Binding", {"create"}});
    out.push_back({"eviction", "policy", "v1", "Eviction", {"create"}});
    out.push_back({"log", "", "v1", "Pod", {"get"}});
    out.push_back({"exec", "", "v1", "PodExecOptions", {"create", "get"}});
    out.push_back({"attach", "", "v1", "PodAttachOptions", {"create", "get"}});
    out.push_back({"portforward", "", "v1", "PodPortForwardOptions", {"create", "get"}});
  }
  if (k.resource == "deployments" || k.resource == "replicasets" ||
      k.resource == "replicationcontrollers") {
    out.push_back({"scale", "autoscaling", "v1", "Scale", rw});
  }
  return out;
}

const Subresource* FindSubresource(const api::KindInfo& kind, std::string_view name) {
  static const auto* cache = new std::map<const api::KindInfo*, std::vector<Subresource>>([] {
    std::map<const api::KindInfo*, std::vector<Subresource>> m;
    for (const auto& k : api::Kinds()) m[&k] = SubresourcesOf(k);
    return m;
  }());
  auto it = cache->find(&kind);
  if (it == cache->end()) return nullptr;
  for (const auto& s : it->second) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Json Version() {
  return {{"major", kKubernetesMajor},
          {"minor", kKubernetesMinor},
          {"gitVersion", kKubernetesGitVersion},
          {"gitCommit", "mkube"},
          {"gitTreeState", "clean"},
          {"buildDate", "2026-01-01T00:00:00Z"},
          {"goVersion", "mkube"},
          {"compiler", "mkube"},
          {"platform", "linux/amd64"}};
}

Json ApiVersions(const std::string& server) {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs",
           {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server}}}}};
}

static Json MakeApiGroupList() {
  Json groups = Json::array();
  for (const auto& [g, v] : Groups()) {
    groups.push_back({{"name", g},
                      {"versions", {GroupVersionRef(g, v)}},
                      {"preferredVersion", GroupVersionRef(g, v)}});
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", std::move(groups)}};
}

static Json MakeResourceList(std::string_view group, std::string_view version) {
  Json resources = Json::array();
  bool served = false;
  for (const auto& k : api::Kinds()) {
    if (k.group != group || k.version != version) continue;
    served = true;
    resources.push_back(ResourceEntry(k));
    for (const auto& s : SubresourcesOf(k)) {
      Json e = {{"name", k.resource + "/" + s.name},
                {"singularName", ""},
                {"namespaced", k.namespaced},
                {"kind", s.kind},
                {"verbs", s.verbs}};
      if (s.group != k.group || s.version != k.version) {
        e["group"] = s.group;
        e["version"] = s.version;
      }
      resources.push_back(std::move(e));
    }
  }
  for (const auto& r : Reviews()) {
    if (r.group != group || r.version != version) continue;
    served = true;
    resources.push_back({{"name", r.resource},
                         {"singularName", ""},
                         {"namespaced", false},
                         {"kind", r.kind},
                         {"verbs", {"create"}}});
  }
  if (!served) return nullptr;
  const std::string gv = group.empty() ? std::string(version)
                                       : std::string(group) + "/" + std::string(version);
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", gv},
          {"resources", std::move(resources)}};
}

static Json MakeAggregatedDiscovery(bool core) {
  Json items = Json::array();
  auto group_item = [&](const std::string& g, const std::string& v) {
    Json resources = Json::array();
    for (const auto& k : api::Kinds()) {
      if (k.group == g && k.version == v) resources.push_back(AggregatedResource(k));
    }
    for (const auto& r : Reviews()) {
      if (r.group != g || r.version != v) continue;
      resources.push_back({{"resource", r.resource},
                           {"responseKind", {{"group", g}, {"version", v}, {"kind", r.kind}}},
                           {"scope", "Cluster"},
                           {"singularResource", ""},
                           {"verbs", {"create"}}});
    }
    Json item = {{"metadata", Json::object()},
                 {"versions",
                  {{{"version", v}, {"resources", std::move(resources)}, {"freshness", "Current"}}}}};
    if (!g.empty()) item["metadata"]["name"] = g;
    items.push_back(std::move(item));
  };
  if (core) {
    group_item("", "v1");
  } else {
    for (const auto& [g, v] : Groups()) group_item(g, v);
  }
  return {{"kind", "APIGroupDiscoveryList"},
          {"apiVersion", "apidiscovery.k8s.io/v2"},
          {"metadata", Json::object()},
          {"items", std::move(items)}};
}

// The documents do not change while the process runs: each is made once.
const Json& ApiGroupList() {
  static const Json* list = new Json(MakeApiGroupList());
  return *list;
}

const Json& ResourceList(std::string_view group, std::string_view version) {
  static const auto* lists = new std::map<std::pair<std::string, std::string>, Json>([] {
    std::map<std::pair<std::string, std::string>, Json> m;
    m[{"", "v1"}] = MakeResourceList("", "v1");
    for (const auto& [g, v] : Groups()) m[{g, v}] = MakeResourceList(g, v);
    return m;
  }());
  static const Json* none = new Json(nullptr);
  auto it = lists->find({std::string(group), std::string(version)});
  return it == lists->end() ? *none : it->second;
}

const Json& AggregatedDiscovery(bool core) {
  static const Json* documents[2] = {new Json(MakeAggregatedDiscovery(false)),
                                     new Json(MakeAggregatedDiscovery(true))};
  return *documents[core ? 1 : 0];
}

}  // namespace mkube::apiserver::rest
