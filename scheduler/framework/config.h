#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/api/apps.pb.h"
#include "scheduler/framework/framework.h"
#include "yaml-cpp/yaml.h"

namespace mkube::scheduler::framework {

// What plugins may need of the scheduler beyond the snapshot: the selector of a pod's
// controller (ReplicaSet, ReplicationController, ...), for default spreading; namespaces and
// their labels, for pod affinity terms with a namespace selector.
class Handle {
 public:
  virtual ~Handle() = default;
  // The label selectors of the controllers owning the pod; none for a bare pod.
  virtual std::vector<api::LabelSelector> OwnerSelectors(const api::Pod& pod) const = 0;
  // The labels of a namespace (none when it is unknown).
  virtual LabelMap NamespaceLabels(const std::string& name) const { return {}; }
  // The namespaces whose labels the selector matches.
  virtual std::vector<std::string> NamespacesMatching(const api::Selector& selector) const {
    return {};
  }
};

// What a Handle answers from the cluster's objects, for the scheduler's informers and
// mkubectl's lists alike. The selectors of the ReplicaSets of the pod's namespace that select
// it (Kubernetes' DefaultSelector, as far as mkube has its kinds):
std::vector<api::LabelSelector> ReplicaSetSelectorsOf(
    const api::Pod& pod, const std::vector<std::shared_ptr<const api::ReplicaSet>>& replica_sets);
// The names of the namespaces whose labels the selector matches.
std::vector<std::string> NamespacesSelected(
    const api::Selector& selector,
    const std::vector<std::shared_ptr<const api::Namespace>>& namespaces);

// A plugin the scheduler knows, and how to make it from its pluginConfig args (an empty node
// when none are given). Errors name the field.
struct PluginFactory {
  std::function<absl::StatusOr<PluginPtr>(const YAML::Node& args, const Handle* handle)> make;
};
const std::map<std::string, PluginFactory>& PluginRegistry();

// Kubernetes 1.32's default profile: its filters in order, its scores with their weights.
struct PluginSet {
  std::vector<std::string> filters;
  std::vector<std::pair<std::string, int64_t>> scores;
};
PluginSet DefaultPlugins();

// Makes a profile's plugins from a plugin set and the pluginConfig args by plugin name.
absl::StatusOr<Profile> MakeProfile(const std::string& scheduler_name, const PluginSet& set,
                                    const std::map<std::string, YAML::Node>& args,
                                    const Handle* handle);

// The profiles of a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1):
// percentageOfNodesToScore, and per profile schedulerName, plugins (multiPoint, filter,
// score: enabled with weights, disabled by name or "*"), pluginConfig. No text: the default
// profile. Errors give the line and the reason.
absl::StatusOr<std::vector<Profile>> LoadConfig(const std::string& text, const Handle* handle);

}  // namespace mkube::scheduler::framework
