#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/kinds.h"
#include "nlohmann/json.hpp"

// What the Kubernetes API front serves, as discovery tells it: /version, /api, /apis, each
// group-version's resource list (legacy discovery) and the aggregated discovery (v2) of
// /api and /apis. Built from api::Kinds(), so every kind mkube has is served and listed.
namespace mkube::apiserver::rest {

using Json = nlohmann::ordered_json;

// The Kubernetes release mkube's API answers as (kubectl's dispatcher picks its build by it).
inline constexpr char kKubernetesMajor[] = "1";
inline constexpr char kKubernetesMinor[] = "32";
inline constexpr char kKubernetesGitVersion[] = "v1.32.4";

struct Subresource {
  std::string name;  // "status", "scale", "eviction", ...
  std::string group, version, kind;  // of what it takes and answers
  std::vector<std::string> verbs;
};

// A resource the API serves that is no stored kind: the reviews (create only).
struct Review {
  std::string group, version, resource, kind;
};
const std::vector<Review>& Reviews();

std::vector<Subresource> SubresourcesOf(const api::KindInfo& kind);
const Subresource* FindSubresource(const api::KindInfo& kind, std::string_view name);
std::vector<std::string> VerbsOf(const api::KindInfo& kind);

Json Version();
// The legacy documents: /api, /apis, /api/v1 and /apis/<group>/<version>. `server` is the
// address clients reached (for serverAddressByClientCIDRs).
Json ApiVersions(const std::string& server);
const Json& ApiGroupList();
// Null when no such group-version is served. Each document is made once, on first use.
const Json& ResourceList(std::string_view group, std::string_view version);
// Aggregated discovery v2: the core group alone (/api) or every other group (/apis).
const Json& AggregatedDiscovery(bool core);
inline constexpr char kAggregatedContentType[] =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

}  // namespace mkube::apiserver::rest
