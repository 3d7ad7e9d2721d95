#include "scheduler/plugins/node_affinity.h"

#include <optional>
#include <vector>

#include "api/labels.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::scheduler::plugins {
namespace {

struct Required : framework::CycleState::Data {
  explicit Required(RequiredNodeAffinity a) : affinity(std::move(a)) {}
  RequiredNodeAffinity affinity;
};

// Preferred terms with their weights; a term that cannot be parsed prefers nothing.
struct Preferred : framework::CycleState::Data {
  std::vector<std::pair<api::Selector, int32_t>> terms;
};

}  // namespace

absl::StatusOr<RequiredNodeAffinity> RequiredNodeAffinity::Of(const api::Pod& pod) {
  RequiredNodeAffinity r;
  r.node_selector_ = api::Selector::FromMap(pod.spec().node_selector());
  const auto& affinity = pod.spec().affinity().node_affinity();
  if (!affinity.has_required_during_scheduling_ignored_during_execution()) return r;
  r.terms_.emplace();
  for (const auto& t :
       affinity.required_during_scheduling_ignored_during_execution().node_selector_terms()) {
    Term term;
    MKUBE_ASSIGN_OR_RETURN(auto labels, api::Selector::FromNodeSelectorTerm(t));
    api::NodeSelectorTerm as_fields;
    *as_fields.mutable_match_expressions() = t.match_fields();
    MKUBE_ASSIGN_OR_RETURN(auto fields, api::Selector::FromNodeSelectorTerm(as_fields));
    term.labels = std::move(labels);
    term.fields = std::move(fields);
    term.empty = t.match_expressions().empty() && t.match_fields().empty();
    r.terms_->push_back(std::move(term));
  }
  return r;
}

bool RequiredNodeAffinity::Matches(const api::Node& node) const {
  if (!node_selector_.Matches(node.metadata().labels())) return false;
  if (!terms_) return true;
  google::protobuf::Map<std::string, std::string> fields;
  fields["metadata.name"] = node.metadata().name();
  for (const Term& t : *terms_) {
    if (!t.empty && t.labels.Matches(node.metadata().labels()) && t.fields.Matches(fields)) {
      return true;
    }
  }
  return false;
}

framework::Status NodeAffinity::PreScore(framework::CycleState& state, const api::Pod& pod,
                                         const std::vector<const framework::NodeInfo*>&,
                                         const framework::Snapshot&) const {
  auto preferred = std::make_unique<Preferred>();
  for (const auto& t : pod.spec()
                           .affinity()
                           .node_affinity()
                           .preferred_during_scheduling_ignored_during_execution()) {
    if (t.weight() == 0) continue;
    auto selector = api::Selector::FromNodeSelectorTerm(t.preference());
    // An empty preference matches no node, as in Kubernetes.
    if (!selector.ok() || selector->empty()) continue;
    preferred->terms.emplace_back(std::move(*selector), t.weight());
  }
  if (preferred->terms.empty()) return framework::Status::Skip();
  state.Write(kName, std::move(preferred));
  return {};
}

int64_t NodeAffinity::Score(const framework::CycleState& state, const api::Pod&,
                            const framework::NodeInfo& node) const {
  const Preferred* pre = state.Read<Preferred>(kName);
  if (!pre) return 0;
  int64_t sum = 0;
  for (const auto& [selector, weight] : pre->terms) {
    if (selector.Matches(node.node().metadata().labels())) sum += weight;
  }
  return sum;
}

void NodeAffinity::NormalizeScore(const framework::CycleState&, const api::Pod&,
                                  std::vector<int64_t>& scores) const {
  framework::DefaultNormalizeScore(false, scores);
}

framework::Status NodeAffinity::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                          const framework::Snapshot&) const {
  // Neither a nodeSelector nor required node affinity: every node will do.
  if (pod.spec().node_selector().empty() &&
      !pod.spec()
           .affinity()
           .node_affinity()
           .has_required_during_scheduling_ignored_during_execution()) {
    return framework::Status::Skip();
  }
  auto r = RequiredNodeAffinity::Of(pod);
  if (!r.ok()) {
    return framework::Status::Unresolvable(
        fmt::format("pod's node affinity cannot be used: {}", std::string(r.status().message())));
  }
  state.Write(kName, std::make_unique<Required>(std::move(*r)));
  return {};
}

framework::Status NodeAffinity::Filter(const framework::CycleState& state, const api::Pod& pod,
                                       const framework::NodeInfo& node) const {
  const Required* r = state.Read<Required>(kName);
  std::optional<RequiredNodeAffinity> parsed;
  if (!r) {  // run without its PreFilter
    auto p = RequiredNodeAffinity::Of(pod);
    if (!p.ok()) return framework::Status::Unresolvable(kReason);
    parsed = std::move(*p);
  }
  const RequiredNodeAffinity& affinity = r ? r->affinity : *parsed;
  return affinity.Matches(node.node()) ? framework::Status()
                                       : framework::Status::Unresolvable(kReason);
}

}  // namespace mkube::scheduler::plugins
