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

// A domain: a topology key and the node's value of it.
using Domain = std::pair<std::string, std::string>;
using DomainCounts = absl::flat_hash_map<Domain, int64_t>;

const LabelMap kNoLabels;

// Adds `delta` to the term's domain on `node`, when the node has the term's key.
void Count(DomainCounts& counts, const AffinityTerm& term, const api::Node& node, int64_t delta) {
  auto it = node.metadata().labels().find(term.topology_key);
  if (it == node.metadata().labels().end()) return;
  counts[Domain(term.topology_key, it->second)] += delta;
}

bool AnyInDomain(const DomainCounts& counts, const std::string& key, const api::Node& node) {
  auto it = node.metadata().labels().find(key);
  if (it == node.metadata().labels().end()) return false;
  auto c = counts.find(Domain(key, it->second));
  return c != counts.end() && c->second > 0;
}

bool Terminating(const api::Pod& pod) { return !pod.metadata().deletion_timestamp().empty(); }

struct FilterState : framework::CycleState::Data {
  AffinityTerms terms;
  DomainCounts affinity;        // pods the pod's required affinity terms select, by domain
  DomainCounts anti_affinity;   // pods its required anti-affinity terms select
  DomainCounts existing_anti;   // placed pods whose required anti-affinity selects the pod
  bool selects_itself = false;  // every required affinity term selects the pod itself
};

struct ScoreState : framework::CycleState::Data {
  // Per topology key, per value: the sum of the weights.
  absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, int64_t>> by_key;
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
      if (!t.namespace_selector || t.namespace_selector->empty()) continue;
      if (handle_) {
        for (auto& ns : handle_->NamespacesMatching(*t.namespace_selector)) {
          t.namespaces.push_back(std::move(ns));
        }
      }
      t.namespace_selector.reset();
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

  for (const auto& node : snapshot.have_pods_with_required_anti_affinity()) {
    for (const auto& placed : node->pods_with_required_anti_affinity()) {
      if (Terminating(*placed->pod)) continue;
      for (const AffinityTerm& t : placed->terms.required_anti_affinity) {
        if (t.Matches(pod, ns_labels)) Count(s->existing_anti, t, node->node(), 1);
      }
    }
  }
  const auto& affinity = s->terms.required_affinity;
  const auto& anti = s->terms.required_anti_affinity;
  if (!affinity.empty() || !anti.empty()) {
    for (const auto& node : snapshot.nodes()) {
      for (const auto& placed : node->pods()) {
        if (Terminating(*placed)) continue;
        for (const AffinityTerm& t : affinity) {
          if (t.Matches(*placed, kNoLabels)) Count(s->affinity, t, node->node(), 1);
        }
        for (const AffinityTerm& t : anti) {
          if (t.Matches(*placed, kNoLabels)) Count(s->anti_affinity, t, node->node(), 1);
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
  for (const auto& [key, value] : n.metadata().labels()) {
    auto c = s->existing_anti.find(Domain(key, value));
    if (c != s->existing_anti.end() && c->second > 0) {
      return framework::Status::Unschedulable(kExistingReason);
    }
  }
  return {};
}

framework::Status InterPodAffinity::PreScore(framework::CycleState& state, const api::Pod& pod,
                                             const std::vector<const NodeInfo*>&,
                                             const framework::Snapshot& snapshot) const {
  auto terms = TermsOf(pod);
  if (!terms.ok()) return framework::Status::Skip();
  const bool has_preferred =
      !terms->preferred_affinity.empty() || !terms->preferred_anti_affinity.empty();
  const LabelMap ns_labels = NamespaceLabels(pod);
  DomainCounts sums;

  // What the pod's preferred terms say of the pods placed on every node.
  if (has_preferred) {
    for (const auto& node : snapshot.nodes()) {
      for (const auto& placed : node->pods()) {
        for (const AffinityTerm& t : terms->preferred_affinity) {
          if (t.Matches(*placed, kNoLabels)) Count(sums, t, node->node(), t.weight);
        }
        for (const AffinityTerm& t : terms->preferred_anti_affinity) {
          if (t.Matches(*placed, kNoLabels)) Count(sums, t, node->node(), -t.weight);
        }
      }
    }
  }
  // What the placed pods' terms say of this pod.
  for (const auto& node : snapshot.have_pods_with_affinity()) {
    for (const auto& placed : node->pods_with_affinity()) {
      if (args_.hard_pod_affinity_weight > 0) {
        for (const AffinityTerm& t : placed->terms.required_affinity) {
          if (t.Matches(pod, ns_labels)) {
            Count(sums, t, node->node(), args_.hard_pod_affinity_weight);
          }
        }
      }
      if (args_.ignore_preferred_terms_of_existing_pods) continue;
      for (const AffinityTerm& t : placed->terms.preferred_affinity) {
        if (t.Matches(pod, ns_labels)) Count(sums, t, node->node(), t.weight);
      }
      for (const AffinityTerm& t : placed->terms.preferred_anti_affinity) {
        if (t.Matches(pod, ns_labels)) Count(sums, t, node->node(), -t.weight);
      }
    }
  }
  if (sums.empty()) return framework::Status::Skip();
  auto s = std::make_unique<ScoreState>();
  for (auto& [domain, sum] : sums) s->by_key[domain.first][domain.second] += sum;
  state.Write(std::string(kName) + "/score", std::move(s));
  return {};
}

int64_t InterPodAffinity::Score(const framework::CycleState& state, const api::Pod&,
                                const NodeInfo& node) const {
  const ScoreState* s = state.Read<ScoreState>(std::string(kName) + "/score");
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
  if (!state.Read<ScoreState>(std::string(kName) + "/score") || scores.empty()) return;
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
