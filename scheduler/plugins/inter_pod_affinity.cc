#include "scheduler/plugins/inter_pod_affinity.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"

namespace mkube::scheduler::plugins {
namespace {

using framework::AffinityTerm;
using framework::AffinityTerms;
using framework::LabelMap;
using framework::NodeInfo;

// Counts by domain: by topology key, then by the nodes' value of it (looked up without
// building a key: few keys, found by string_view).
using DomainCounts = absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, int64_t>>;

const LabelMap kNoLabels;
constexpr char kScoreKey[] = "InterPodAffinity/score";

// Adds `delta` to the term's domain on `node`, when the node has the term's key.
void Count(DomainCounts& counts, const AffinityTerm& term, const api::Node& node, int64_t delta) {
  auto it = node.metadata().labels().find(term.topology_key);
  if (it == node.metadata().labels().end()) return;
  counts[term.topology_key][it->second] += delta;
}

bool AnyInDomain(const DomainCounts& counts, const std::string& key, const api::Node& node) {
  auto it = node.metadata().labels().find(key);
  if (it == node.metadata().labels().end()) return false;
  auto values = counts.find(key);
  if (values == counts.end()) return false;
  auto c = values->second.find(it->second);
  return c != values->second.end() && c->second > 0;
}

// The pod's terms as the node's label index answers them: for a term selecting one label in
// named namespaces, the index keys (one per namespace); empty for others.
using IndexKeys = std::vector<std::vector<std::string>>;
IndexKeys IndexKeysOf(const std::vector<AffinityTerm>& terms) {
  IndexKeys out(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].namespace_selector) continue;
    auto label = framework::SingleLabel(terms[i].selector);
    if (!label) continue;
    for (const auto& ns : terms[i].namespaces) {
      out[i].push_back(framework::LabelIndexKey(ns, label->first, label->second));
    }
  }
  return out;
}

// Whether placed pods' terms select the pod being scheduled, asked once per distinct term
// (the pods of one workload all carry the same terms).
class SelectsPod {
 public:
  SelectsPod(const api::Pod& pod, const LabelMap& ns_labels) : pod_(pod), ns_labels_(ns_labels) {}
  bool operator()(const AffinityTerm& t) {
    auto [it, fresh] = memo_.try_emplace(t.canonical, false);
    if (fresh) it->second = t.Matches(pod_, ns_labels_);
    return it->second;
  }

 private:
  const api::Pod& pod_;
  const LabelMap& ns_labels_;
  absl::flat_hash_map<std::string_view, bool> memo_;
};

// How many pods on the node the pod's term selects (those being deleted too, as Kubernetes
// counts them).
int64_t Selected(const AffinityTerm& term, const std::vector<std::string>& keys,
                 const NodeInfo& node) {
  int64_t n = 0;
  if (!keys.empty()) {
    for (const auto& k : keys) n += node.PodsWithLabel(k, true);
    return n;
  }
  for (const auto& placed : node.pods()) {
    if (term.Matches(*placed, kNoLabels)) ++n;
  }
  return n;
}

struct FilterState : framework::CycleState::Data {
  AffinityTerms terms;
  DomainCounts affinity;        // pods the pod's required affinity terms select, by domain
  DomainCounts anti_affinity;   // pods its required anti-affinity terms select
  DomainCounts existing_anti;   // placed pods whose required anti-affinity selects the pod
  bool selects_itself = false;  // every required affinity term selects the pod itself
};

struct ScoreState : framework::CycleState::Data {
  DomainCounts by_key;  // the sum of the weights, by domain
};

}  // namespace

framework::LabelMap InterPodAffinity::NamespaceLabels(const api::Pod& pod) const {
  return handle_ ? handle_->NamespaceLabels(pod.metadata().namespace_()) : LabelMap();
}

absl::StatusOr<AffinityTerms> InterPodAffinity::TermsOf(const api::Pod& pod) const {
  auto terms = framework::ParseAffinityTerms(pod);
  if (!terms.ok()) return terms.status();
  for (auto* list : {&terms->required_affinity, &terms->required_anti_affinity,
                     &terms->preferred_affinity, &terms->preferred_anti_affinity}) {
    for (AffinityTerm& t : *list) {
      // An empty namespace selector is every namespace, labels or not; others are the
      // namespaces that have such labels now.
      if (t.namespace_selector && !t.namespace_selector->empty()) {
        if (handle_) {
          for (auto& ns : handle_->NamespacesMatching(*t.namespace_selector)) {
            t.namespaces.push_back(std::move(ns));
          }
        }
        t.namespace_selector.reset();
      }
      // Each namespace once: the index counts a pod per namespace named.
      std::sort(t.namespaces.begin(), t.namespaces.end());
      t.namespaces.erase(std::unique(t.namespaces.begin(), t.namespaces.end()), t.namespaces.end());
    }
  }
  return terms;
}

framework::Status InterPodAffinity::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                              const framework::Snapshot& snapshot) const {
  auto terms = TermsOf(pod);
  if (!terms.ok()) {
    return framework::Status::Unresolvable(fmt::format("pod's pod affinity cannot be used: {}",
                                                       std::string(terms.status().message())));
  }
  auto s = std::make_unique<FilterState>();
  s->terms = std::move(*terms);
  const LabelMap ns_labels = NamespaceLabels(pod);

  SelectsPod selects(pod, ns_labels);
  for (const auto& node : snapshot.have_pods_with_required_anti_affinity()) {
    for (const auto& c : node->affinity_terms()) {
      if (c.kind == framework::TermCount::kRequiredAntiAffinity && selects(c.term)) {
        Count(s->existing_anti, c.term, node->node(), c.count);
      }
    }
  }
  const auto& affinity = s->terms.required_affinity;
  const auto& anti = s->terms.required_anti_affinity;
  if (!affinity.empty() || !anti.empty()) {
    const IndexKeys affinity_keys = IndexKeysOf(affinity), anti_keys = IndexKeysOf(anti);
    for (const auto& node : snapshot.nodes()) {
      // A placed pod counts for the pod's affinity when it matches every term (one term:
      // the index can count them).
      if (affinity.size() == 1) {
        if (int64_t n = Selected(affinity[0], affinity_keys[0], *node)) {
          Count(s->affinity, affinity[0], node->node(), n);
        }
      } else if (affinity.size() > 1) {
        for (const auto& placed : node->pods()) {
          if (!std::all_of(affinity.begin(), affinity.end(),
                           [&](const auto& t) { return t.Matches(*placed, kNoLabels); })) {
            continue;
          }
          for (const AffinityTerm& t : affinity) Count(s->affinity, t, node->node(), 1);
        }
      }
      for (size_t i = 0; i < anti.size(); ++i) {
        if (int64_t n = Selected(anti[i], anti_keys[i], *node)) {
          Count(s->anti_affinity, anti[i], node->node(), n);
        }
      }
    }
    s->selects_itself = std::all_of(affinity.begin(), affinity.end(),
                                    [&](const auto& t) { return t.Matches(pod, ns_labels); });
  }
  if (affinity.empty() && anti.empty() && s->existing_anti.empty()) {
    return framework::Status::Skip();
  }
  state.Write(kName, std::move(s));
  return {};
}

framework::Status InterPodAffinity::Filter(const framework::CycleState& state, const api::Pod&,
                                           const NodeInfo& node) const {
  const FilterState* s = state.Read<FilterState>(kName);
  if (!s) return {};  // nothing to check (PreFilter skipped)
  const api::Node& n = node.node();
  // Required affinity: every term's domain on this node has a pod the term selects.
  bool all_found = true;
  for (const AffinityTerm& t : s->terms.required_affinity) {
    if (!n.metadata().labels().contains(t.topology_key)) {
      return framework::Status::Unresolvable(kAffinityReason);
    }
    if (!AnyInDomain(s->affinity, t.topology_key, n)) all_found = false;
  }
  // None anywhere, and the pod would satisfy its own terms: the first of its group.
  if (!all_found && !(s->affinity.empty() && s->selects_itself)) {
    return framework::Status::Unresolvable(kAffinityReason);
  }
  for (const AffinityTerm& t : s->terms.required_anti_affinity) {
    if (AnyInDomain(s->anti_affinity, t.topology_key, n)) {
      return framework::Status::Unschedulable(kAntiAffinityReason);
    }
  }
  for (const auto& [key, values] : s->existing_anti) {
    if (AnyInDomain(s->existing_anti, key, n)) {
      return framework::Status::Unschedulable(kExistingReason);
    }
  }
  return {};
}

framework::Status InterPodAffinity::PreScore(framework::CycleState& state, const api::Pod& pod,
                                             const std::vector<const NodeInfo*>&,
                                             const framework::Snapshot& snapshot) const {
  // The terms PreFilter parsed, or (when it skipped the pod) parsed now.
  const FilterState* filtered = state.Read<FilterState>(kName);
  absl::StatusOr<AffinityTerms> parsed;
  if (!filtered) {
    parsed = TermsOf(pod);
    if (!parsed.ok()) return framework::Status::Skip();
  }
  const AffinityTerms* terms = filtered ? &filtered->terms : &*parsed;
  const bool has_preferred =
      !terms->preferred_affinity.empty() || !terms->preferred_anti_affinity.empty();
  const LabelMap ns_labels = NamespaceLabels(pod);
  DomainCounts sums;

  // What the pod's preferred terms say of the pods placed on every node.
  if (has_preferred) {
    const auto& liked = terms->preferred_affinity;
    const auto& disliked = terms->preferred_anti_affinity;
    const IndexKeys liked_keys = IndexKeysOf(liked), disliked_keys = IndexKeysOf(disliked);
    for (const auto& node : snapshot.nodes()) {
      for (size_t i = 0; i < liked.size(); ++i) {
        if (int64_t n = Selected(liked[i], liked_keys[i], *node)) {
          Count(sums, liked[i], node->node(), n * liked[i].weight);
        }
      }
      for (size_t i = 0; i < disliked.size(); ++i) {
        if (int64_t n = Selected(disliked[i], disliked_keys[i], *node)) {
          Count(sums, disliked[i], node->node(), -n * disliked[i].weight);
        }
      }
    }
  }
  // What the placed pods' terms say of this pod.
  SelectsPod selects(pod, ns_labels);
  for (const auto& node : snapshot.have_pods_with_affinity()) {
    for (const auto& c : node->affinity_terms()) {
      int64_t weight = 0;
      switch (c.kind) {
        case framework::TermCount::kRequiredAffinity:
          weight = args_.hard_pod_affinity_weight;
          break;
        case framework::TermCount::kRequiredAntiAffinity:
          break;
        case framework::TermCount::kPreferredAffinity:
          weight = args_.ignore_preferred_terms_of_existing_pods ? 0 : c.term.weight;
          break;
        case framework::TermCount::kPreferredAntiAffinity:
          weight = args_.ignore_preferred_terms_of_existing_pods ? 0 : -c.term.weight;
          break;
      }
      if (weight != 0 && selects(c.term)) Count(sums, c.term, node->node(), weight * c.count);
    }
  }
  if (sums.empty()) return framework::Status::Skip();
  auto s = std::make_unique<ScoreState>();
  s->by_key = std::move(sums);
  state.Write(kScoreKey, std::move(s));
  return {};
}

int64_t InterPodAffinity::Score(const framework::CycleState& state, const api::Pod&,
                                const NodeInfo& node) const {
  const ScoreState* s = state.Read<ScoreState>(kScoreKey);
  if (!s) return 0;
  int64_t score = 0;
  const auto& labels = node.node().metadata().labels();
  for (const auto& [key, values] : s->by_key) {
    auto label = labels.find(key);
    if (label == labels.end()) continue;
    auto v = values.find(label->second);
    if (v != values.end()) score += v->second;
  }
  return score;
}

void InterPodAffinity::NormalizeScore(const framework::CycleState& state, const api::Pod&,
                                      std::vector<int64_t>& scores) const {
  if (!state.Read<ScoreState>(kScoreKey) || scores.empty()) return;
  const auto [min, max] = std::minmax_element(scores.begin(), scores.end());
  const int64_t low = *min, spread = *max - *min;
  for (int64_t& s : scores) {
    s = spread > 0
            ? static_cast<int64_t>(static_cast<double>(framework::kMaxNodeScore) *
                                   static_cast<double>(s - low) / static_cast<double>(spread))
            : 0;
  }
}

}  // namespace mkube::scheduler::plugins
