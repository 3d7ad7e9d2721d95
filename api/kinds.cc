#include "api/kinds.h"

#include "api/codec.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/batch.pb.h"
#include "proto/api/core.pb.h"
#include "proto/api/metrics.pb.h"

namespace mkube::api {

const std::vector<KindInfo>& Kinds() {
  static const std::vector<KindInfo> kinds = [] {
    std::vector<KindInfo> k;
    auto add = [&](std::string kind, std::string group, std::string resource,
                   std::string singular, std::vector<std::string> short_names, bool namespaced,
                   const google::protobuf::Message* prototype,
                   std::vector<std::string> legacy = {}) {
      KindInfo info;
      info.kind = std::move(kind);
      info.group = std::move(group);
      info.version = "v1";
      info.resource = std::move(resource);
      info.singular = std::move(singular);
      info.short_names = std::move(short_names);
      info.namespaced = namespaced;
      info.prototype = prototype;
      info.legacy_api_versions = std::move(legacy);
      k.push_back(std::move(info));
    };
    const std::vector<std::string> legacy_apps = {"extensions/v1beta1", "apps/v1beta1",
                                                  "apps/v1beta2"};
    add("Namespace", "", "namespaces", "namespace", {"ns"}, false, &Namespace::default_instance());
    add("Node", "", "nodes", "node", {"no"}, false, &Node::default_instance());
    add("Pod", "", "pods", "pod", {"po"}, true, &Pod::default_instance());
    add("Event", "", "events", "event", {"ev"}, true, &Event::default_instance());
    add("ReplicationController", "", "replicationcontrollers", "replicationcontroller", {"rc"},
        true, &ReplicationController::default_instance());
    add("Deployment", "apps", "deployments", "deployment", {"deploy"}, true,
        &Deployment::default_instance(), legacy_apps);
    add("ReplicaSet", "apps", "replicasets", "replicaset", {"rs"}, true,
        &ReplicaSet::default_instance(), {"extensions/v1beta1", "apps/v1beta2"});
    add("DaemonSet", "apps", "daemonsets", "daemonset", {"ds"}, true,
        &DaemonSet::default_instance(), {"extensions/v1beta1", "apps/v1beta2"});
    add("Job", "batch", "jobs", "job", {}, true, &Job::default_instance());
    add("CronJob", "batch", "cronjobs", "cronjob", {"cj"}, true, &CronJob::default_instance());
    add("Lease", "coordination.k8s.io", "leases", "lease", {}, true,
        &Lease::default_instance());
    add("PodDisruptionBudget", "policy", "poddisruptionbudgets", "poddisruptionbudget", {"pdb"},
        true, &PodDisruptionBudget::default_instance());
    // After the core kinds: a plain "nodes" or "pods" finds those.
    for (bool pods : {false, true}) {
      KindInfo info;
      info.kind = pods ? "PodMetrics" : "NodeMetrics";
      info.group = "metrics.k8s.io";
      info.version = "v1beta1";
      info.resource = pods ? "pods" : "nodes";
      info.singular = pods ? "pod" : "node";
      info.namespaced = pods;
      info.measured = true;
      info.qualified = true;
      info.prototype =
          pods ? static_cast<const google::protobuf::Message*>(&PodMetrics::default_instance())
               : &NodeMetrics::default_instance();
      k.push_back(std::move(info));
    }
    return k;
  }();
  return kinds;
}

const KindInfo* FindKind(std::string_view api_version, std::string_view kind) {
  for (const auto& k : Kinds()) {
    if (k.kind != kind) continue;
    if (k.api_version() == api_version) return &k;
    for (const auto& legacy : k.legacy_api_versions) {
      if (legacy == api_version) return &k;
    }
  }
  return nullptr;
}

const std::vector<const KindInfo*>& AllCategory() {
  static const auto* kinds = new std::vector<const KindInfo*>([] {
    std::vector<const KindInfo*> out;
    for (const char* r : {"pods", "replicationcontrollers", "daemonsets", "deployments",
                          "replicasets", "jobs", "cronjobs"}) {
      out.push_back(FindResource(r));
    }
    return out;
  }());
  return *kinds;
}

const KindInfo* FindResource(std::string_view name) {
  std::string lower(name);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // "deployments.apps" names the group too.
  std::string_view base = lower;
  std::string_view group;
  if (auto dot = base.find('.'); dot != std::string_view::npos) {
    group = base.substr(dot + 1);
    base = base.substr(0, dot);
  }
  for (const auto& k : Kinds()) {
    if (!group.empty() && k.group != group) continue;
    std::string kind_lower = k.kind;
    for (auto& c : kind_lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (base == k.resource || base == k.singular || base == kind_lower) return &k;
    for (const auto& s : k.short_names) {
      if (base == s) return &k;
    }
  }
  return nullptr;
}

absl::StatusOr<Object> DecodeObject(const YAML::Node& doc, std::vector<std::string>* unknown) {
  if (!doc.IsMap()) return absl::InvalidArgumentError("a manifest must be a map of fields");
  const YAML::Node api_version = doc["apiVersion"];
  const YAML::Node kind = doc["kind"];
  if (!kind || !kind.IsScalar() || kind.Scalar().empty()) {
    return absl::InvalidArgumentError("Object 'Kind' is missing");
  }
  if (!api_version || !api_version.IsScalar() || api_version.Scalar().empty()) {
    return absl::InvalidArgumentError("Object 'apiVersion' is missing");
  }
  const KindInfo* info = FindKind(api_version.Scalar(), kind.Scalar());
  if (!info) {
    return absl::NotFoundError(fmt::format("no matches for kind \"{}\" in version \"{}\"",
                                           kind.Scalar(), api_version.Scalar()));
  }
  Object obj;
  obj.info = info;
  obj.written_api_version = api_version.Scalar();
  obj.message = info->New();
  if (auto st = DecodeNode(doc, obj.message.get(), "", unknown); !st.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("error decoding {}: {}", info->kind, std::string(st.message())));
  }
  // The message keeps the version as written: the server defaults legacy versions
  // differently, then serves the object under the current one.
  return obj;
}

std::string WrittenApiVersion(const KindInfo& kind, const google::protobuf::Message& msg) {
  const auto* f = msg.GetDescriptor()->FindFieldByName("api_version");
  const std::string& written = msg.GetReflection()->GetString(msg, f);
  return FindKind(written, kind.kind) == &kind ? written : kind.api_version();
}

absl::StatusOr<std::vector<Object>> DecodeManifests(std::string_view text) {
  MKUBE_ASSIGN_OR_RETURN(auto docs, ParseDocuments(text));
  std::vector<Object> out;
  for (size_t i = 0; i < docs.size(); ++i) {
    auto obj = DecodeObject(docs[i]);
    if (!obj.ok()) {
      if (docs.size() == 1) return obj.status();
      return absl::Status(obj.status().code(),
                          fmt::format("document {}: {}", i + 1, std::string(obj.status().message())));
    }
    out.push_back(std::move(*obj));
  }
  return out;
}

}  // namespace mkube::api
