// schedule --dry-run: where a pod would go now and why, by the scheduler's own framework and
// plugins over the cluster as it is listed. Nothing is created or bound.
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "api/defaults.h"
#include "api/labels.h"
#include "api/validation.h"
#include "cli/commands.h"
#include "cli/manifests.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "scheduler/framework/config.h"
#include "scheduler/framework/explain.h"

namespace mkube::cli {
namespace {

namespace fw = scheduler::framework;

template <typename T>
absl::StatusOr<std::vector<std::shared_ptr<const T>>> ListAll(Session& s, const char* resource) {
  const api::KindInfo* kind = api::FindResource(resource);
  MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*kind, "", "", "")));
  std::vector<std::shared_ptr<const T>> out;
  for (auto& m : list.items) out.push_back(std::dynamic_pointer_cast<const T>(m));
  return out;
}

// What the plugins ask of the scheduler, from what was listed.
class ListedCluster : public fw::Handle {
 public:
  std::vector<std::shared_ptr<const api::ReplicaSet>> replica_sets;
  std::vector<std::shared_ptr<const api::Namespace>> namespaces;

  std::vector<api::LabelSelector> OwnerSelectors(const api::Pod& pod) const override {
    return fw::ReplicaSetSelectorsOf(pod, replica_sets);
  }
  fw::LabelMap NamespaceLabels(const std::string& name) const override {
    for (const auto& ns : namespaces) {
      if (ns->metadata().name() == name) return ns->metadata().labels();
    }
    return {};
  }
  std::vector<std::string> NamespacesMatching(const api::Selector& selector) const override {
    return fw::NamespacesSelected(selector, namespaces);
  }
};

// Every node with the pods bound to it, as the scheduler's cache holds them.
absl::StatusOr<fw::Snapshot> SnapshotOf(Session& s) {
  MKUBE_ASSIGN_OR_RETURN(auto nodes, ListAll<api::Node>(s, "nodes"));
  MKUBE_ASSIGN_OR_RETURN(auto pods, ListAll<api::Pod>(s, "pods"));
  std::map<std::string, fw::NodeInfo> infos;
  for (const auto& n : nodes) infos.emplace(n->metadata().name(), fw::NodeInfo(n));
  for (const auto& p : pods) {
    auto it = infos.find(p->spec().node_name());
    if (it != infos.end()) it->second.AddPod(p);
  }
  std::vector<fw::NodeInfoPtr> list;
  for (auto& [name, info] : infos) list.push_back(std::make_shared<fw::NodeInfo>(std::move(info)));
  return fw::Snapshot(std::move(list));
}

absl::StatusOr<std::string> ReadConfig(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  if (!in) return UserError(fmt::format("error: cannot read --config {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::Status ScheduleDryRun(Session& s, const std::vector<std::string>& files,
                            const std::string& config) {
  MKUBE_ASSIGN_OR_RETURN(auto manifests, ReadManifests(files));
  MKUBE_ASSIGN_OR_RETURN(const std::string config_text, ReadConfig(config));
  ListedCluster cluster;
  auto profiles = fw::LoadConfig(config_text, &cluster);
  if (!profiles.ok()) {
    return UserError(
        fmt::format("error: --config {}: {}", config, std::string(profiles.status().message())));
  }
  MKUBE_ASSIGN_OR_RETURN(cluster.replica_sets, ListAll<api::ReplicaSet>(s, "replicasets"));
  MKUBE_ASSIGN_OR_RETURN(cluster.namespaces, ListAll<api::Namespace>(s, "namespaces"));
  MKUBE_ASSIGN_OR_RETURN(const fw::Snapshot snapshot, SnapshotOf(s));
  std::mt19937_64 rng(std::random_device{}());
  bool all_fit = true;
  for (auto& m : manifests) {
    auto* pod = dynamic_cast<api::Pod*>(m.object.message.get());
    if (!pod) {
      return UserError(
          fmt::format("error: {}: schedule takes pods, not {}", m.source, m.object.info->kind));
    }
    MKUBE_RETURN_IF_ERROR(NamespaceFor(s, pod, *m.object.info).status());
    api::Default(m.object);
    if (absl::Status st = api::Validate(m.object); !st.ok()) {
      return UserError(fmt::format("error: {}: {}", m.source, std::string(st.message())));
    }
    const std::string name =
        fmt::format("{}/{}", pod->metadata().namespace_(), pod->metadata().name());
    const std::string& wanted = pod->spec().scheduler_name();
    const fw::Profile* profile = nullptr;
    for (const auto& p : *profiles) {
      if (p.scheduler_name == wanted) profile = &p;
    }
    if (!profile) {
      return UserError(
          fmt::format("error: pod {}: no profile is named schedulerName \"{}\"", name, wanted));
    }
    const fw::ScheduleResult result =
        fw::Schedule(*profile, *pod, snapshot, {.explain = true}, rng);
    if (result.status.ok()) {
      std::cout << fmt::format("pod {} would be scheduled to {} (dry run)\n", name, result.node);
    } else {
      all_fit = false;
      std::cout << fmt::format("pod {} would stay Pending (dry run)\n", name);
    }
    std::cout << fw::ExplainText(result, snapshot.nodes().size());
  }
  return all_fit ? absl::OkStatus() : Reported();
}

}  // namespace mkube::cli
