#include "scheduler/plugins/pod_topology_spread.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "api/taints.h"
#include "base/status.h"
#include "fmt/format.h"
#include "scheduler/plugins/node_affinity.h"

namespace mkube::scheduler::plugins {
namespace {

using Constraint = PodTopologySpread::Constraint;
using framework::NodeInfo;

using framework::kHostnameLabel;
using framework::kZoneLabel;
constexpr char kScoreKey[] = "PodTopologySpread/score";

// Pod counts by the value of one constraint's key.
using DomainCounts = absl::flat_hash_map<std::string, int64_t>;

absl::StatusOr<Constraint> MakeConstraint(const api::TopologySpreadConstraint& c,
                                          const api::Pod& pod) {
  Constraint out;
  out.max_skew = c.max_skew();
  out.topology_key = c.topology_key();
  out.min_domains = c.has_min_domains() ? c.min_domains() : 1;
  out.honor_node_affinity = c.node_affinity_policy() != "Ignore";
  out.honor_taints = c.node_taints_policy() == "Honor";
  api::LabelSelector selector = c.label_selector();
  // matchLabelKeys: the pod's own values of those keys narrow the selector.
  for (const auto& key : c.match_label_keys()) {
    auto it = pod.metadata().labels().find(key);
    if (it != pod.metadata().labels().end()) (*selector.mutable_match_labels())[key] = it->second;
  }
  MKUBE_ASSIGN_OR_RETURN(auto parsed, api::Selector::FromLabelSelector(selector));
  out.selector = std::move(parsed);
  // Without a selector, or with an empty one, no placed pod counts (and only an empty one
  // selects the pod itself), as in Kubernetes.
  out.selects_nothing = out.selector.empty();
  out.selects_self_if_empty = c.has_label_selector();
  if (auto label = framework::SingleLabel(out.selector)) {
    out.index_key =
        framework::LabelIndexKey(pod.metadata().namespace_(), label->first, label->second);
  }
  return out;
}

bool HasAllKeys(const NodeInfo& node, const std::vector<Constraint>& constraints) {
  return std::all_of(constraints.begin(), constraints.end(), [&](const Constraint& c) {
    return node.Label(c.topology_key) != nullptr;
  });
}

// Whether the node's domain counts for the constraint (nodeAffinityPolicy, nodeTaintsPolicy).
bool Included(const Constraint& c, const api::Pod& pod, const api::Node& node,
              const RequiredNodeAffinity* affinity) {
  if (c.honor_node_affinity && affinity && !affinity->Matches(node)) return false;
  if (c.honor_taints) {
    for (const auto& taint : node.spec().taints()) {
      if (taint.effect() != "NoSchedule" && taint.effect() != "NoExecute") continue;
      if (!api::Tolerated(pod.spec().tolerations(), taint)) return false;
    }
  }
  return true;
}

// Whether a constraint's selector selects a label group, decided once per cycle.
using GroupMemo = absl::flat_hash_map<uint64_t, bool>;

// Whether the constraint selects the group of `sample` (pods in the pod's namespace only).
bool Selects(const Constraint& c, const std::string& ns, uint64_t group, const api::Pod& sample,
             GroupMemo* memo) {
  auto decide = [&] {
    return sample.metadata().namespace_() == ns && c.selector.Matches(sample.metadata().labels());
  };
  if (!memo) return decide();
  if (auto it = memo->find(group); it != memo->end()) return it->second;
  return memo->emplace(group, decide()).first->second;
}

// The pods on the node the constraint selects: in the pod's namespace, not being deleted.
// One-label selectors are answered by the label index; others group by group (pods with the
// same labels together), with `memo` remembering the answer across the cycle's nodes.
int64_t CountMatching(const NodeInfo& node, const Constraint& c, const std::string& ns,
                      GroupMemo* memo = nullptr) {
  if (c.selects_nothing) return 0;
  if (!c.index_key.empty()) return node.PodsWithLabel(c.index_key, false);
  int64_t n = 0;
  for (const auto& g : node.label_groups()) {
    if (g.count != g.terminating && Selects(c, ns, g.id, *g.sample, memo)) {
      n += g.count - g.terminating;
    }
  }
  return n;
}

// The same over a domain's sums.
int64_t CountMatching(const framework::Domain& domain, const Constraint& c, const std::string& ns,
                      GroupMemo* memo) {
  if (c.selects_nothing) return 0;
  int64_t n = 0;
  for (const auto& [id, g] : domain.groups) {
    if (Selects(c, ns, id, *g.sample, memo)) n += g.live;
  }
  return n;
}

// When no node is left out of the constraint's domains (no nodeAffinityPolicy with a pod's
// required node affinity, no nodeTaintsPolicy Honor), counts come from the snapshot's sums
// per domain instead of from every node.
bool EveryNodeIncluded(const Constraint& c, const RequiredNodeAffinity* affinity) {
  return !c.honor_taints && !(c.honor_node_affinity && affinity && !affinity->empty());
}

struct FilterState : framework::CycleState::Data {
  std::vector<Constraint> constraints;
  std::vector<DomainCounts> counts;
  std::vector<int64_t> min;   // the emptiest domain's count, per constraint
  std::vector<int64_t> self;  // 1 when the constraint selects the pod itself
};

struct ScoreState : framework::CycleState::Data {
  std::vector<Constraint> constraints;
  absl::flat_hash_set<std::string> ignored;  // nodes without every key: score 0
  std::vector<bool> ignored_at;              // the same, by the scored nodes' order
  std::vector<DomainCounts> counts;          // not for the hostname key: counted per node
  // For the hostname key: each scored node's count, made in PreScore with the cycle's memo
  // of which label groups the selector selects.
  std::vector<absl::flat_hash_map<const NodeInfo*, int64_t>> per_node;
  std::vector<double> weights;
};

// The domains of the nodes being scored, each counted from 0 (those of the hostname key
// counted at once, node by node), and each constraint's weight: the log of its domain count.
void CollectDomains(ScoreState* s, const std::vector<const NodeInfo*>& nodes, bool require_all,
                    const std::string& ns, std::vector<GroupMemo>& memos) {
  std::vector<int64_t> sizes(s->constraints.size(), 0);
  for (const NodeInfo* node : nodes) {
    const bool ignored = require_all && !HasAllKeys(*node, s->constraints);
    s->ignored_at.push_back(ignored);
    if (ignored) {
      s->ignored.insert(node->name());
      continue;
    }
    for (size_t i = 0; i < s->constraints.size(); ++i) {
      const std::string& key = s->constraints[i].topology_key;
      if (key == kHostnameLabel) {
        s->per_node[i][node] = CountMatching(*node, s->constraints[i], ns, &memos[i]);
        continue;
      }
      const std::string* value = node->Label(key);
      if (s->counts[i].try_emplace(value ? *value : "", 0).second) ++sizes[i];
    }
  }
  for (size_t i = 0; i < s->constraints.size(); ++i) {
    const int64_t size = s->constraints[i].topology_key == kHostnameLabel
                             ? static_cast<int64_t>(nodes.size() - s->ignored.size())
                             : sizes[i];
    s->weights.push_back(std::log(static_cast<double>(size + 2)));
  }
}

// Counts the pods of each domain from the snapshot's domain sums where every node of a domain
// is included; returns which constraints were counted so, and whether any other is left to
// count node by node.
std::vector<bool> CountFromDomainSums(ScoreState* s, const framework::Snapshot& snapshot,
                                      const RequiredNodeAffinity* required, bool require_all,
                                      const std::string& ns, std::vector<GroupMemo>& memos,
                                      bool* node_by_node) {
  std::vector<bool> from_sums(s->constraints.size());
  for (size_t i = 0; i < s->constraints.size(); ++i) {
    const Constraint& c = s->constraints[i];
    if (c.topology_key == kHostnameLabel) continue;
    from_sums[i] = EveryNodeIncluded(c, required) && (!require_all || s->constraints.size() == 1);
    *node_by_node = *node_by_node || !from_sums[i];
    if (!from_sums[i]) continue;
    // Only the domains of the nodes being scored are counted.
    const framework::Domains& domains = snapshot.DomainsOf(c.topology_key);
    for (auto& [value, count] : s->counts[i]) {
      if (auto it = domains.by_value.find(value); it != domains.by_value.end()) {
        count += CountMatching(it->second, c, ns, &memos[i]);
      }
      // Without every key required, a node without this one is in the "" domain.
      if (value.empty() && !require_all) count += CountMatching(domains.missing, c, ns, &memos[i]);
    }
  }
  return from_sums;
}

// Counts the pods of the domains not counted from the sums, over the nodes included.
void CountNodeByNode(ScoreState* s, const api::Pod& pod, const framework::Snapshot& snapshot,
                     const std::vector<bool>& from_sums, const RequiredNodeAffinity* required,
                     bool require_all, const std::string& ns, std::vector<GroupMemo>& memos) {
  for (const auto& node : snapshot.nodes()) {
    if (require_all && !HasAllKeys(*node, s->constraints)) continue;
    for (size_t i = 0; i < s->constraints.size(); ++i) {
      const Constraint& c = s->constraints[i];
      if (c.topology_key == kHostnameLabel || from_sums[i] ||
          !Included(c, pod, node->node(), required)) {
        continue;
      }
      const std::string* value = node->Label(c.topology_key);
      auto it = s->counts[i].find(value ? *value : "");
      if (it != s->counts[i].end()) it->second += CountMatching(*node, c, ns, &memos[i]);
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<Constraint>> PodTopologySpread::ConstraintsOf(const api::Pod& pod,
                                                                         bool hard,
                                                                         bool* defaulted) const {
  const std::string kind = hard ? "DoNotSchedule" : "ScheduleAnyway";
  std::vector<Constraint> out;
  *defaulted = false;
  if (!pod.spec().topology_spread_constraints().empty()) {
    for (const auto& c : pod.spec().topology_spread_constraints()) {
      if (c.when_unsatisfiable() != kind) continue;
      MKUBE_ASSIGN_OR_RETURN(auto made, MakeConstraint(c, pod));
      out.push_back(std::move(made));
    }
    return out;
  }
  // The defaults select the pods of the same controllers.
  std::vector<api::TopologySpreadConstraint> defaults;
  if (args_.system_defaulted) {
    if (hard) return out;
    for (const auto& [key, skew] : {std::pair{kHostnameLabel, 3}, std::pair{kZoneLabel, 5}}) {
      api::TopologySpreadConstraint c;
      c.set_topology_key(key);
      c.set_max_skew(skew);
      c.set_when_unsatisfiable(kind);
      defaults.push_back(std::move(c));
    }
    *defaulted = true;
  } else {
    for (const auto& c : args_.default_constraints) {
      if (c.when_unsatisfiable() == kind) defaults.push_back(c);
    }
  }
  if (defaults.empty() || !handle_) return out;
  api::LabelSelector merged;
  for (const auto& s : handle_->OwnerSelectors(pod)) {
    for (const auto& [k, v] : s.match_labels()) (*merged.mutable_match_labels())[k] = v;
    for (const auto& e : s.match_expressions()) *merged.add_match_expressions() = e;
  }
  if (merged.match_labels().empty() && merged.match_expressions().empty()) return out;
  for (auto& c : defaults) {
    *c.mutable_label_selector() = merged;
    MKUBE_ASSIGN_OR_RETURN(auto made, MakeConstraint(c, pod));
    out.push_back(std::move(made));
  }
  return out;
}

framework::Status PodTopologySpread::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                               const framework::Snapshot& snapshot) const {
  bool defaulted = false;
  auto constraints = ConstraintsOf(pod, true, &defaulted);
  if (!constraints.ok()) {
    return framework::Status::Unresolvable(
        fmt::format("pod's topology spread constraints cannot be used: {}",
                    std::string(constraints.status().message())));
  }
  if (constraints->empty()) return framework::Status::Skip();
  auto affinity = RequiredNodeAffinity::Of(pod);
  const RequiredNodeAffinity* required = affinity.ok() ? &*affinity : nullptr;
  auto s = std::make_unique<FilterState>();
  s->constraints = std::move(*constraints);
  s->counts.resize(s->constraints.size());
  const std::string& ns = pod.metadata().namespace_();
  std::vector<GroupMemo> memos(s->constraints.size());
  if (s->constraints.size() == 1 && EveryNodeIncluded(s->constraints[0], required)) {
    // One key: the nodes with every key are those with this one, the snapshot's domains.
    const Constraint& c = s->constraints[0];
    for (const auto& [value, domain] : snapshot.DomainsOf(c.topology_key).by_value) {
      s->counts[0][value] = CountMatching(domain, c, ns, &memos[0]);
    }
  } else {
    for (const auto& node : snapshot.nodes()) {
      if (!HasAllKeys(*node, s->constraints)) continue;
      for (size_t i = 0; i < s->constraints.size(); ++i) {
        const Constraint& c = s->constraints[i];
        if (!Included(c, pod, node->node(), required)) continue;
        s->counts[i][*node->Label(c.topology_key)] +=
            CountMatching(*node, c, ns, &memos[i]);
      }
    }
  }
  for (size_t i = 0; i < s->constraints.size(); ++i) {
    int64_t min = std::numeric_limits<int32_t>::max();
    for (const auto& [value, n] : s->counts[i]) min = std::min(min, n);
    if (static_cast<int64_t>(s->counts[i].size()) < s->constraints[i].min_domains) min = 0;
    s->min.push_back(min);
    const Constraint& c = s->constraints[i];
    const bool self =
        c.selects_nothing ? c.selects_self_if_empty : c.selector.Matches(pod.metadata().labels());
    s->self.push_back(self ? 1 : 0);
  }
  state.Write(kName, std::move(s));
  return {};
}

framework::Status PodTopologySpread::Filter(const framework::CycleState& state, const api::Pod& pod,
                                            const NodeInfo& node) const {
  const FilterState* s = state.Read<FilterState>(kName);
  if (!s) return {};
  for (size_t i = 0; i < s->constraints.size(); ++i) {
    const Constraint& c = s->constraints[i];
    const std::string* value = node.Label(c.topology_key);
    if (!value) return framework::Status::Unresolvable(kMissingLabelReason);
    auto it = s->counts[i].find(*value);
    const int64_t here = it == s->counts[i].end() ? 0 : it->second;
    if (here + s->self[i] - s->min[i] > c.max_skew) {
      return framework::Status::Unschedulable(kReason);
    }
  }
  return {};
}

framework::Status PodTopologySpread::PreScore(framework::CycleState& state, const api::Pod& pod,
                                              const std::vector<const NodeInfo*>& nodes,
                                              const framework::Snapshot& snapshot) const {
  bool defaulted = false;
  auto constraints = ConstraintsOf(pod, false, &defaulted);
  if (!constraints.ok() || constraints->empty() || snapshot.nodes().empty()) {
    return framework::Status::Skip();
  }
  // The system defaults do not need every key: nodes without a zone still spread by name.
  const bool require_all = !defaulted;
  auto s = std::make_unique<ScoreState>();
  s->constraints = std::move(*constraints);
  s->counts.resize(s->constraints.size());
  s->per_node.resize(s->constraints.size());
  const std::string& ns = pod.metadata().namespace_();
  std::vector<GroupMemo> memos(s->constraints.size());
  CollectDomains(s.get(), nodes, require_all, ns, memos);
  auto affinity = RequiredNodeAffinity::Of(pod);
  const RequiredNodeAffinity* required = affinity.ok() ? &*affinity : nullptr;
  // Which constraints are counted from the snapshot's domain sums: with every key required,
  // only a lone constraint (a node without its key has no domain and counts for none).
  bool node_by_node = false;
  const std::vector<bool> from_sums =
      CountFromDomainSums(s.get(), snapshot, required, require_all, ns, memos, &node_by_node);
  if (node_by_node) {
    CountNodeByNode(s.get(), pod, snapshot, from_sums, required, require_all, ns, memos);
  }
  state.Write(kScoreKey, std::move(s));
  return {};
}

int64_t PodTopologySpread::Score(const framework::CycleState& state, const api::Pod& pod,
                                 const NodeInfo& node) const {
  const ScoreState* s = state.Read<ScoreState>(kScoreKey);
  if (!s || (!s->ignored.empty() && s->ignored.contains(node.name()))) return 0;
  double score = 0;
  for (size_t i = 0; i < s->constraints.size(); ++i) {
    const Constraint& c = s->constraints[i];
    const std::string* value = node.Label(c.topology_key);
    if (!value) continue;
    int64_t count = 0;
    if (c.topology_key == kHostnameLabel) {
      auto it = s->per_node[i].find(&node);
      count = it != s->per_node[i].end() ? it->second
                                         : CountMatching(node, c, pod.metadata().namespace_());
    } else if (auto it = s->counts[i].find(*value); it != s->counts[i].end()) {
      count = it->second;
    }
    // maxSkew − 1 waters down small differences: a larger skew is tolerated more.
    score += static_cast<double>(count) * s->weights[i] + static_cast<double>(c.max_skew - 1);
  }
  return static_cast<int64_t>(std::round(score));
}

void PodTopologySpread::NormalizeScore(const framework::CycleState& state, const api::Pod&,
                                       std::vector<int64_t>& scores) const {
  const ScoreState* s = state.Read<ScoreState>(kScoreKey);
  if (!s) return;
  auto ignored = [&](size_t i) { return i < s->ignored_at.size() && s->ignored_at[i]; };
  int64_t min = std::numeric_limits<int64_t>::max(), max = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (ignored(i)) continue;
    min = std::min(min, scores[i]);
    max = std::max(max, scores[i]);
  }
  // Fewer matching pods is better: the emptiest domain gets 100.
  for (size_t i = 0; i < scores.size(); ++i) {
    if (ignored(i)) {
      scores[i] = 0;
    } else if (max == 0) {
      scores[i] = framework::kMaxNodeScore;
    } else {
      scores[i] = framework::kMaxNodeScore * (max + min - scores[i]) / max;
    }
  }
}

}  // namespace mkube::scheduler::plugins
