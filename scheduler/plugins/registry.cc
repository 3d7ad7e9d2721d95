// The plugins mkube-scheduler knows by name, and how their pluginConfig args are read.
#include "base/status.h"
#include "fmt/format.h"
#include "scheduler/framework/config.h"
#include "scheduler/plugins/balanced_allocation.h"
#include "scheduler/plugins/image_locality.h"
#include "scheduler/plugins/inter_pod_affinity.h"
#include "scheduler/plugins/node_affinity.h"
#include "scheduler/plugins/node_name.h"
#include "scheduler/plugins/node_ports.h"
#include "scheduler/plugins/node_resources_fit.h"
#include "scheduler/plugins/node_unschedulable.h"
#include "scheduler/plugins/pod_topology_spread.h"
#include "scheduler/plugins/taint_toleration.h"
#include "scheduler/plugins/volume_restrictions.h"

namespace mkube::scheduler::framework {
namespace {

using plugins::ResourceWeight;

absl::Status ArgError(const YAML::Node& node, const std::string& what) {
  const YAML::Mark m = node.Mark();
  return absl::InvalidArgumentError(m.line < 0 ? what
                                               : fmt::format("line {}: {}", m.line + 1, what));
}

absl::Status OnlyKeys(const YAML::Node& node, std::initializer_list<std::string_view> keys) {
  if (!node || node.IsNull()) return absl::OkStatus();
  if (!node.IsMap()) return ArgError(node, "args: expected a map");
  for (const auto& kv : node) {
    const std::string k = kv.first.as<std::string>();
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      return ArgError(kv.first, fmt::format("args: unknown field \"{}\"", k));
    }
  }
  return absl::OkStatus();
}

// resources: [{name: cpu, weight: 1}, ...]
absl::StatusOr<std::vector<ResourceWeight>> Resources(const YAML::Node& list) {
  if (!list.IsSequence()) return ArgError(list, "resources: expected a list");
  std::vector<ResourceWeight> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    MKUBE_RETURN_IF_ERROR(OnlyKeys(item, {"name", "weight"}));
    ResourceWeight r;
    if (!item["name"] || !item["name"].IsScalar() || item["name"].Scalar().empty()) {
      return ArgError(item, fmt::format("resources[{}].name: Required value", i));
    }
    r.name = item["name"].Scalar();
    if (item["weight"]) {
      if (!YAML::convert<int64_t>::decode(item["weight"], r.weight) || r.weight < 1 ||
          r.weight > 100) {
        return ArgError(item["weight"],
                        fmt::format("resources[{}].weight: must be an integer from 1 to 100", i));
      }
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) return ArgError(list, "resources: at least one resource is needed");
  return out;
}

absl::StatusOr<PluginPtr> MakeFit(const YAML::Node& args, const Handle*) {
  plugins::NodeResourcesFit::Args a;
  if (auto st = OnlyKeys(args, {"scoringStrategy", "ignoredResources", "ignoredResourceGroups"});
      !st.ok()) {
    return st;
  }
  if (args && args["scoringStrategy"]) {
    const YAML::Node s = args["scoringStrategy"];
    MKUBE_RETURN_IF_ERROR(OnlyKeys(s, {"type", "resources"}));
    if (s["type"]) {
      const std::string type = s["type"].as<std::string>();
      if (type == "LeastAllocated") {
        a.strategy = plugins::NodeResourcesFit::Strategy::kLeastAllocated;
      } else if (type == "MostAllocated") {
        a.strategy = plugins::NodeResourcesFit::Strategy::kMostAllocated;
      } else {
        return ArgError(s["type"], fmt::format("scoringStrategy.type: unsupported value \"{}\": "
                                               "supported values: \"LeastAllocated\", "
                                               "\"MostAllocated\"",
                                               type));
      }
    }
    if (s["resources"]) {
      MKUBE_ASSIGN_OR_RETURN(auto r, Resources(s["resources"]));
      a.resources = std::move(r);
    }
  }
  if (args && (args["ignoredResources"] || args["ignoredResourceGroups"])) {
    return ArgError(args, "ignoredResources and ignoredResourceGroups are not supported");
  }
  return std::make_unique<plugins::NodeResourcesFit>(std::move(a));
}

absl::StatusOr<PluginPtr> MakeBalanced(const YAML::Node& args, const Handle*) {
  plugins::BalancedAllocation::Args a;
  MKUBE_RETURN_IF_ERROR(OnlyKeys(args, {"resources"}));
  if (args && args["resources"]) {
    MKUBE_ASSIGN_OR_RETURN(auto r, Resources(args["resources"]));
    a.resources = std::move(r);
  }
  return std::make_unique<plugins::BalancedAllocation>(std::move(a));
}

absl::StatusOr<PluginPtr> MakeInterPodAffinity(const YAML::Node& args, const Handle* handle) {
  plugins::InterPodAffinity::Args a;
  if (auto st = OnlyKeys(args, {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"});
      !st.ok()) {
    return st;
  }
  if (args && args["hardPodAffinityWeight"]) {
    const YAML::Node w = args["hardPodAffinityWeight"];
    if (!YAML::convert<int32_t>::decode(w, a.hard_pod_affinity_weight) ||
        a.hard_pod_affinity_weight < 0 || a.hard_pod_affinity_weight > 100) {
      return ArgError(w, "hardPodAffinityWeight: must be an integer from 0 to 100");
    }
  }
  if (args && args["ignorePreferredTermsOfExistingPods"]) {
    const YAML::Node b = args["ignorePreferredTermsOfExistingPods"];
    if (!YAML::convert<bool>::decode(b, a.ignore_preferred_terms_of_existing_pods)) {
      return ArgError(b, "ignorePreferredTermsOfExistingPods: must be true or false");
    }
  }
  return std::make_unique<plugins::InterPodAffinity>(a, handle);
}

// defaultConstraints: [{maxSkew: 1, topologyKey: ..., whenUnsatisfiable: ...}, ...]
absl::StatusOr<std::vector<api::TopologySpreadConstraint>> SpreadDefaults(const YAML::Node& list) {
  if (!list.IsSequence()) return ArgError(list, "defaultConstraints: expected a list");
  std::vector<api::TopologySpreadConstraint> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    if (auto st = OnlyKeys(item, {"maxSkew", "topologyKey", "whenUnsatisfiable"}); !st.ok()) {
      return st;
    }
    api::TopologySpreadConstraint c;
    int32_t skew = 0;
    if (!item["maxSkew"] || !YAML::convert<int32_t>::decode(item["maxSkew"], skew) || skew < 1) {
      return ArgError(item, fmt::format("defaultConstraints[{}].maxSkew: must be greater than "
                                        "zero",
                                        i));
    }
    c.set_max_skew(skew);
    if (!item["topologyKey"] || !item["topologyKey"].IsScalar() ||
        item["topologyKey"].Scalar().empty()) {
      return ArgError(item, fmt::format("defaultConstraints[{}].topologyKey: Required value", i));
    }
    c.set_topology_key(item["topologyKey"].Scalar());
    const std::string when =
        item["whenUnsatisfiable"] ? item["whenUnsatisfiable"].as<std::string>() : "";
    if (when != "DoNotSchedule" && when != "ScheduleAnyway") {
      return ArgError(item, fmt::format("defaultConstraints[{}].whenUnsatisfiable: unsupported "
                                        "value \"{}\": supported values: \"DoNotSchedule\", "
                                        "\"ScheduleAnyway\"",
                                        i, when));
    }
    c.set_when_unsatisfiable(when);
    out.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<PluginPtr> MakeSpread(const YAML::Node& args, const Handle* handle) {
  plugins::PodTopologySpread::Args a;
  MKUBE_RETURN_IF_ERROR(OnlyKeys(args, {"defaultingType", "defaultConstraints"}));
  if (args && args["defaultingType"]) {
    const std::string type = args["defaultingType"].as<std::string>();
    if (type != "System" && type != "List") {
      return ArgError(args["defaultingType"],
                      fmt::format("defaultingType: unsupported value \"{}\": supported values: "
                                  "\"System\", \"List\"",
                                  type));
    }
    a.system_defaulted = type == "System";
  }
  if (args && args["defaultConstraints"]) {
    if (a.system_defaulted) {
      return ArgError(args["defaultConstraints"],
                      "defaultConstraints: must be empty when defaultingType is System");
    }
    MKUBE_ASSIGN_OR_RETURN(auto list, SpreadDefaults(args["defaultConstraints"]));
    a.default_constraints = std::move(list);
  }
  return std::make_unique<plugins::PodTopologySpread>(std::move(a), handle);
}

// A plugin without args.
template <typename T>
PluginFactory Plain() {
  return {[](const YAML::Node& args, const Handle*) -> absl::StatusOr<PluginPtr> {
    if (args && args.IsMap() && args.size() > 0) {
      return ArgError(args, fmt::format("{} takes no args", T::kName));
    }
    return std::make_unique<T>();
  }};
}

}  // namespace

const std::map<std::string, PluginFactory>& PluginRegistry() {
  static const auto* registry = new std::map<std::string, PluginFactory>{
      {plugins::NodeUnschedulable::kName, Plain<plugins::NodeUnschedulable>()},
      {plugins::NodeName::kName, Plain<plugins::NodeName>()},
      {plugins::TaintToleration::kName, Plain<plugins::TaintToleration>()},
      {plugins::NodeAffinity::kName, Plain<plugins::NodeAffinity>()},
      {plugins::NodePorts::kName, Plain<plugins::NodePorts>()},
      {plugins::NodeResourcesFit::kName, {MakeFit}},
      {plugins::BalancedAllocation::kName, {MakeBalanced}},
      {plugins::ImageLocality::kName, Plain<plugins::ImageLocality>()},
      {plugins::VolumeRestrictions::kName, Plain<plugins::VolumeRestrictions>()},
      {plugins::InterPodAffinity::kName, {MakeInterPodAffinity}},
      {plugins::PodTopologySpread::kName, {MakeSpread}},
  };
  return *registry;
}

}  // namespace mkube::scheduler::framework
