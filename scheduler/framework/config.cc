#include "scheduler/framework/config.h"

#include <algorithm>
#include <set>

#include "base/status.h"
#include "fmt/format.h"

namespace mkube::scheduler::framework {
namespace {

// "line N: " of a node of the text (yaml-cpp counts from 0).
std::string At(const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return m.line < 0 ? "" : fmt::format("line {}: ", m.line + 1);
}

absl::Status Invalid(const YAML::Node& node, const std::string& what) {
  return absl::InvalidArgumentError(At(node) + what);
}

// Every key of the map is one of `allowed`.
absl::Status CheckKeys(const YAML::Node& map, const std::string& path,
                       std::initializer_list<std::string_view> allowed) {
  if (!map.IsMap()) return Invalid(map, fmt::format("{}: expected a map", path));
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return Invalid(kv.first, fmt::format("{}: unknown field \"{}\"", path, key));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Int(const YAML::Node& node, const std::string& path) {
  int64_t v = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, v)) {
    return Invalid(node, fmt::format("{}: expected an integer", path));
  }
  return v;
}

absl::StatusOr<std::string> String(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) return Invalid(node, fmt::format("{}: expected a string", path));
  return node.Scalar();
}

// One extension point's changes: disabled names (or "*") first, then enabled ones with their
// weights (0: the plugin's default, or 1).
struct PointChange {
  std::vector<std::string> disabled;
  std::vector<std::pair<std::string, int64_t>> enabled;
  std::vector<YAML::Node> enabled_at;  // where each enabled entry is written
};

absl::StatusOr<PointChange> ParsePoint(const YAML::Node& node, const std::string& path,
                                       bool weights) {
  PointChange change;
  MKUBE_RETURN_IF_ERROR(CheckKeys(node, path, {"enabled", "disabled"}));
  for (const char* list : {"enabled", "disabled"}) {
    const YAML::Node items = node[list];
    if (!items) continue;
    const std::string lpath = fmt::format("{}.{}", path, list);
    if (!items.IsSequence()) return Invalid(items, lpath + ": expected a list");
    for (size_t i = 0; i < items.size(); ++i) {
      const YAML::Node item = items[i];
      const std::string ipath = fmt::format("{}[{}]", lpath, i);
      MKUBE_RETURN_IF_ERROR(CheckKeys(item, ipath, {"name", "weight"}));
      if (!item["name"]) return Invalid(item, ipath + ".name: Required value");
      MKUBE_ASSIGN_OR_RETURN(auto name, String(item["name"], ipath + ".name"));
      const bool known = name == "*" || PluginRegistry().contains(name);
      if (!known)
        return Invalid(item["name"], fmt::format("{}.name: unknown plugin \"{}\"", ipath, name));
      int64_t weight = 0;
      if (item["weight"]) {
        if (!weights)
          return Invalid(item["weight"], ipath + ".weight: only score plugins have weights");
        MKUBE_ASSIGN_OR_RETURN(auto w, Int(item["weight"], ipath + ".weight"));
        if (w < 0) return Invalid(item["weight"], ipath + ".weight: must not be negative");
        weight = w;
      }
      if (std::string(list) == "enabled") {
        if (name == "*") return Invalid(item["name"], ipath + ".name: \"*\" can only be disabled");
        change.enabled.emplace_back(name, weight);
        change.enabled_at.push_back(item);
      } else {
        change.disabled.push_back(name);
      }
    }
  }
  return change;
}

void ApplyFilters(const PointChange& c, std::vector<std::string>& filters) {
  for (const auto& d : c.disabled) {
    if (d == "*") filters.clear();
    std::erase(filters, d);
  }
  for (const auto& [name, weight] : c.enabled) {
    if (std::find(filters.begin(), filters.end(), name) == filters.end()) filters.push_back(name);
  }
}

void ApplyScores(const PointChange& c, const PluginSet& defaults,
                 std::vector<std::pair<std::string, int64_t>>& scores) {
  for (const auto& d : c.disabled) {
    if (d == "*") scores.clear();
    std::erase_if(scores, [&](const auto& s) { return s.first == d; });
  }
  // (Structured bindings cannot be captured by clang 14's lambdas.)
  for (const auto& entry : c.enabled) {
    const std::string& name = entry.first;
    int64_t weight = entry.second;
    if (weight == 0) {
      weight = 1;
      for (const auto& [n, w] : defaults.scores) {
        if (n == name) weight = w;
      }
    }
    auto it =
        std::find_if(scores.begin(), scores.end(), [&](const auto& s) { return s.first == name; });
    if (it != scores.end()) {
      it->second = weight;
    } else {
      scores.emplace_back(name, weight);
    }
  }
}

// Which points a plugin can take part in.
struct Points {
  bool filter = false, score = false;
};
Points PointsOf(const Plugin& p) {
  return {dynamic_cast<const FilterPlugin*>(&p) != nullptr,
          dynamic_cast<const ScorePlugin*>(&p) != nullptr};
}

// A profile's plugins: what each extension point enables and disables, applied to `set`.
absl::Status ParsePlugins(const YAML::Node& plugins, const std::string& ppath,
                          const PluginSet& defaults, PluginSet* set) {
  if (auto st = CheckKeys(plugins, ppath, {"multiPoint", "filter", "score"}); !st.ok()) {
    return st;
  }
  for (const char* point : {"multiPoint", "filter", "score"}) {
    if (!plugins[point]) continue;
    const std::string p = point;
    MKUBE_ASSIGN_OR_RETURN(auto change, ParsePoint(plugins[point], ppath + "." + p, p != "filter"));
    if (p != "score") {
      PointChange filters = change;
      if (p == "multiPoint") {  // only the plugins that filter
        std::erase_if(filters.enabled, [](const auto& e) {
          auto made = PluginRegistry().at(e.first).make(YAML::Node(), nullptr);
          return !made.ok() || !PointsOf(**made).filter;
        });
      }
      ApplyFilters(filters, set->filters);
    }
    if (p != "filter") {
      PointChange scores = change;
      auto scores_not = [](const std::string& name) {
        auto made = PluginRegistry().at(name).make(YAML::Node(), nullptr);
        return !made.ok() || !PointsOf(**made).score;
      };
      for (size_t i = 0; p == "score" && i < change.enabled.size(); ++i) {
        if (scores_not(change.enabled[i].first)) {
          return Invalid(change.enabled_at[i],
                         fmt::format("{}.score.enabled[{}]: {} does not score", ppath, i,
                                     change.enabled[i].first));
        }
      }
      std::erase_if(scores.enabled, [&](const auto& e) { return scores_not(e.first); });
      ApplyScores(scores, defaults, set->scores);
    }
  }
  return absl::OkStatus();
}

// A profile's pluginConfig: the args of each plugin named, by name.
absl::StatusOr<std::map<std::string, YAML::Node>> ParsePluginConfig(const YAML::Node& config,
                                                                    const std::string& cpath) {
  std::map<std::string, YAML::Node> args;
  if (!config.IsSequence()) return Invalid(config, cpath + ": expected a list");
  for (size_t i = 0; i < config.size(); ++i) {
    const std::string ipath = fmt::format("{}[{}]", cpath, i);
    MKUBE_RETURN_IF_ERROR(CheckKeys(config[i], ipath, {"name", "args"}));
    MKUBE_ASSIGN_OR_RETURN(auto n, String(config[i]["name"], ipath + ".name"));
    if (!PluginRegistry().contains(n)) {
      return Invalid(config[i]["name"], fmt::format("{}.name: unknown plugin \"{}\"", ipath, n));
    }
    if (args.contains(n)) {
      return Invalid(config[i]["name"], fmt::format("{}.name: \"{}\" configured twice", ipath, n));
    }
    args[n] = config[i]["args"] ? config[i]["args"] : YAML::Node(YAML::NodeType::Map);
  }
  return args;
}

absl::StatusOr<Profile> ParseProfile(const YAML::Node& node, const std::string& path,
                                     int percentage, const Handle* handle) {
  if (auto st = CheckKeys(node, path,
                          {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"});
      !st.ok()) {
    return st;
  }
  std::string name = "default-scheduler";
  if (node["schedulerName"]) {
    MKUBE_ASSIGN_OR_RETURN(auto n, String(node["schedulerName"], path + ".schedulerName"));
    name = n;
  }
  const PluginSet defaults = DefaultPlugins();
  PluginSet set = defaults;
  if (const YAML::Node plugins = node["plugins"]) {
    MKUBE_RETURN_IF_ERROR(ParsePlugins(plugins, path + ".plugins", defaults, &set));
  }
  std::map<std::string, YAML::Node> args;
  if (const YAML::Node config = node["pluginConfig"]) {
    MKUBE_ASSIGN_OR_RETURN(auto parsed, ParsePluginConfig(config, path + ".pluginConfig"));
    args = std::move(parsed);
  }
  auto profile = MakeProfile(name, set, args, handle);
  if (!profile.ok()) return profile.status();
  profile->percentage_of_nodes_to_score = percentage;
  if (node["percentageOfNodesToScore"]) {
    MKUBE_ASSIGN_OR_RETURN(
        auto pct, Int(node["percentageOfNodesToScore"], path + ".percentageOfNodesToScore"));
    if (pct < 0 || pct > 100) {
      return Invalid(node["percentageOfNodesToScore"],
                     path + ".percentageOfNodesToScore: must be between 0 and 100");
    }
    profile->percentage_of_nodes_to_score = static_cast<int>(pct);
  }
  return profile;
}

}  // namespace

PluginSet DefaultPlugins() {
  PluginSet set;
  for (const auto& name :
       {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
        "NodeResourcesFit", "VolumeRestrictions", "PodTopologySpread", "InterPodAffinity"}) {
    if (PluginRegistry().contains(name)) set.filters.emplace_back(name);
  }
  for (const auto& [name, weight] : std::initializer_list<std::pair<const char*, int64_t>>{
           {"TaintToleration", 3},
           {"NodeAffinity", 2},
           {"NodeResourcesFit", 1},
           {"PodTopologySpread", 2},
           {"InterPodAffinity", 2},
           {"NodeResourcesBalancedAllocation", 1},
           {"ImageLocality", 1}}) {
    if (PluginRegistry().contains(name)) set.scores.emplace_back(name, weight);
  }
  return set;
}

absl::StatusOr<Profile> MakeProfile(const std::string& scheduler_name, const PluginSet& set,
                                    const std::map<std::string, YAML::Node>& args,
                                    const Handle* handle) {
  Profile profile;
  profile.scheduler_name = scheduler_name;
  std::map<std::string, const Plugin*> made;
  auto instance = [&](const std::string& name) -> absl::StatusOr<const Plugin*> {
    if (auto it = made.find(name); it != made.end()) return it->second;
    auto a = args.find(name);
    auto plugin =
        PluginRegistry().at(name).make(a == args.end() ? YAML::Node() : a->second, handle);
    if (!plugin.ok()) {
      // "line N: what" from the args becomes "line N: pluginConfig NAME: what".
      std::string msg(plugin.status().message()), line;
      if (msg.rfind("line ", 0) == 0 && msg.find(": ") != std::string::npos) {
        line = msg.substr(0, msg.find(": ") + 2);
        msg = msg.substr(line.size());
      }
      return absl::InvalidArgumentError(fmt::format("{}pluginConfig {}: {}", line, name, msg));
    }
    const Plugin* p = plugin->get();
    profile.owned.push_back(std::move(*plugin));
    made[name] = p;
    return p;
  };
  for (const auto& name : set.filters) {
    MKUBE_ASSIGN_OR_RETURN(auto p, instance(name));
    if (auto* pre = dynamic_cast<const PreFilterPlugin*>(p))
      profile.filters.pre_filters.push_back(pre);
    if (auto* f = dynamic_cast<const FilterPlugin*>(p)) profile.filters.filters.push_back(f);
  }
  for (const auto& [name, weight] : set.scores) {
    MKUBE_ASSIGN_OR_RETURN(auto p, instance(name));
    auto* score = dynamic_cast<const ScorePlugin*>(p);
    if (!score) return absl::InvalidArgumentError(fmt::format("plugin {} does not score", name));
    if (auto* pre = dynamic_cast<const PreScorePlugin*>(p)) profile.pre_scores.push_back(pre);
    profile.scores.push_back({score, weight});
  }
  for (const auto& [name, node] : args) {
    if (!made.contains(name)) {
      return absl::InvalidArgumentError(
          fmt::format("pluginConfig {}: the plugin is not enabled in the profile", name));
    }
  }
  return profile;
}

absl::StatusOr<std::vector<Profile>> LoadConfig(const std::string& text, const Handle* handle) {
  std::vector<Profile> profiles;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(fmt::format("line {}: {}", e.mark.line + 1, e.msg));
  }
  if (!root || root.IsNull()) {
    MKUBE_ASSIGN_OR_RETURN(auto p, MakeProfile("default-scheduler", DefaultPlugins(), {}, handle));
    profiles.push_back(std::move(p));
    return profiles;
  }
  if (auto st =
          CheckKeys(root, "config", {"apiVersion", "kind", "profiles", "percentageOfNodesToScore"});
      !st.ok()) {
    return st;
  }
  if (root["apiVersion"] &&
      root["apiVersion"].as<std::string>() != "kubescheduler.config.k8s.io/v1") {
    return Invalid(root["apiVersion"],
                   fmt::format("apiVersion: want kubescheduler.config.k8s.io/v1, not \"{}\"",
                               root["apiVersion"].as<std::string>()));
  }
  if (root["kind"] && root["kind"].as<std::string>() != "KubeSchedulerConfiguration") {
    return Invalid(root["kind"], fmt::format("kind: want KubeSchedulerConfiguration, not \"{}\"",
                                             root["kind"].as<std::string>()));
  }
  int percentage = 0;
  if (root["percentageOfNodesToScore"]) {
    MKUBE_ASSIGN_OR_RETURN(auto pct,
                           Int(root["percentageOfNodesToScore"], "percentageOfNodesToScore"));
    if (pct < 0 || pct > 100) {
      return Invalid(root["percentageOfNodesToScore"],
                     "percentageOfNodesToScore: must be between 0 and 100");
    }
    percentage = static_cast<int>(pct);
  }
  const YAML::Node list = root["profiles"];
  if (!list) {
    MKUBE_ASSIGN_OR_RETURN(auto p, MakeProfile("default-scheduler", DefaultPlugins(), {}, handle));
    p.percentage_of_nodes_to_score = percentage;
    profiles.push_back(std::move(p));
    return profiles;
  }
  if (!list.IsSequence()) return Invalid(list, "profiles: expected a list");
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("profiles[{}]", i);
    auto p = ParseProfile(list[i], path, percentage, handle);
    if (!p.ok()) {
      // Errors from making plugins carry no line: give the profile's.
      const std::string msg(p.status().message());
      if (msg.rfind("line ", 0) == 0) return p.status();
      return Invalid(list[i], fmt::format("{}: {}", path, msg));
    }
    if (!names.insert(p->scheduler_name).second) {
      return Invalid(list[i], fmt::format("{}.schedulerName: \"{}\" is used by two profiles", path,
                                          p->scheduler_name));
    }
    profiles.push_back(std::move(*p));
  }
  if (profiles.empty()) return Invalid(list, "profiles: at least one profile is needed");
  return profiles;
}

std::vector<api::LabelSelector> ReplicaSetSelectorsOf(
    const api::Pod& pod, const std::vector<std::shared_ptr<const api::ReplicaSet>>& replica_sets) {
  std::vector<api::LabelSelector> out;
  for (const auto& rs : replica_sets) {
    if (rs->metadata().namespace_() != pod.metadata().namespace_()) continue;
    auto selector = api::Selector::FromLabelSelector(rs->spec().selector());
    if (selector.ok() && !selector->empty() && selector->Matches(pod.metadata().labels())) {
      out.push_back(rs->spec().selector());
    }
  }
  return out;
}

std::vector<std::string> NamespacesSelected(
    const api::Selector& selector,
    const std::vector<std::shared_ptr<const api::Namespace>>& namespaces) {
  std::vector<std::string> out;
  for (const auto& ns : namespaces) {
    if (selector.Matches(ns->metadata().labels())) out.push_back(ns->metadata().name());
  }
  return out;
}

}  // namespace mkube::scheduler::framework
