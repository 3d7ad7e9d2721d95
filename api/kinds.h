#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "yaml-cpp/yaml.h"

namespace mkube::api {

// What the API knows about one kind.
struct KindInfo {
  std::string kind;        // "Deployment"
  std::string group;       // "apps"; empty for the core group
  std::string version;     // "v1"
  std::string resource;    // "deployments"
  std::string singular;    // "deployment"
  std::vector<std::string> short_names;          // {"deploy"}
  std::vector<std::string> legacy_api_versions;  // accepted on input, served as api_version()
  bool namespaced = true;
  // Measured by the node agents and served on request (metrics.k8s.io): get and list only,
  // never stored.
  bool measured = false;
  // Another kind, of the core group, has the same resource name ("pods"): requests name this
  // one with its group ("pods.metrics.k8s.io").
  bool qualified = false;
  const google::protobuf::Message* prototype = nullptr;

  // "apps/v1", or "v1" for the core group.
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // The resource as requests name it.
  std::string request_resource() const { return qualified ? resource + "." + group : resource; }
  std::unique_ptr<google::protobuf::Message> New() const {
    return std::unique_ptr<google::protobuf::Message>(prototype->New());
  }
};

const std::vector<KindInfo>& Kinds();
// By apiVersion and kind as written in a manifest (legacy versions included).
const KindInfo* FindKind(std::string_view api_version, std::string_view kind);
// By any name a user types: resource ("pods"), singular ("pod"), short name ("po"), or kind.
const KindInfo* FindResource(std::string_view name);
// The kinds of the category "all" (`get all`; discovery's categories), in the order kubectl
// lists them.
const std::vector<const KindInfo*>& AllCategory();

// One decoded manifest.
struct Object {
  const KindInfo* info = nullptr;
  std::unique_ptr<google::protobuf::Message> message;
  // The apiVersion as written (the message holds it too, until the server serves it under
  // the kind's current version).
  std::string written_api_version;
};

// Decodes a manifest document: finds its kind from apiVersion and kind, then its fields
// (`unknown`: as DecodeNode's).
absl::StatusOr<Object> DecodeObject(const YAML::Node& doc,
                                    std::vector<std::string>* unknown = nullptr);
// The apiVersion a received object was written in, when it is one the kind accepts
// (legacy ones included); otherwise the kind's current one.
std::string WrittenApiVersion(const KindInfo& kind, const google::protobuf::Message& msg);

// Every document of a YAML stream or JSON text.
absl::StatusOr<std::vector<Object>> DecodeManifests(std::string_view text);

}  // namespace mkube::api
