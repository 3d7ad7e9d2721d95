#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "api/labels.h"
#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// A pod's nodeSelector and required node affinity terms, parsed once, as other plugins
// (PodTopologySpread) also match them.
class RequiredNodeAffinity {
 public:
  static absl::StatusOr<RequiredNodeAffinity> Of(const api::Pod& pod);
  bool Matches(const api::Node& node) const;
  // Neither a nodeSelector nor required terms: every node matches.
  bool empty() const { return node_selector_.empty() && !terms_; }

 private:
  // A term's expressions over the node's labels, its fields over the node's fields (only
  // metadata.name exists).
  struct Term {
    api::Selector labels;
    api::Selector fields;
    bool empty = true;  // a term without expressions or fields matches no node
  };
  api::Selector node_selector_;
  std::optional<std::vector<Term>> terms_;  // none: no required node affinity
};

// PodSelectorMatches and required node affinity: the node's labels must match the pod's
// nodeSelector, and one of its requiredDuringSchedulingIgnoredDuringExecution terms (terms
// ORed, the expressions of a term ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields
// on metadata.name). Preferred terms only rank: the score is the sum of the weights of the
// preferred terms the node matches, scaled so the best node has 100.
class NodeAffinity final : public framework::PreFilterPlugin,
                           public framework::FilterPlugin,
                           public framework::PreScorePlugin,
                           public framework::ScorePlugin {
 public:
  static constexpr char kName[] = "NodeAffinity";
  static constexpr char kReason[] = "node(s) didn't match Pod's node affinity/selector";
  std::string_view Name() const override { return kName; }
  // Parses the pod's selector and terms once; a term that cannot be parsed rejects the pod.
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) const override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const std::vector<const framework::NodeInfo*>& nodes,
                             const framework::Snapshot& snapshot) const override;
  int64_t Score(const framework::CycleState& state, const api::Pod& pod,
                const framework::NodeInfo& node) const override;
  void NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                      std::vector<int64_t>& scores) const override;
};

}  // namespace mkube::scheduler::plugins
