#pragma once

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// PodSelectorMatches and required node affinity: the node's labels must match the pod's
// nodeSelector, and one of its requiredDuringSchedulingIgnoredDuringExecution terms (terms
// ORed, the expressions of a term ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields
// on metadata.name). Preferred terms only rank: that is the plugin's score, to come.
class NodeAffinity final : public framework::PreFilterPlugin, public framework::FilterPlugin {
 public:
  static constexpr char kName[] = "NodeAffinity";
  static constexpr char kReason[] = "node(s) didn't match Pod's node affinity/selector";
  std::string_view Name() const override { return kName; }
  // Parses the pod's selector and terms once; a term that cannot be parsed rejects the pod.
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod) const override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
};

}  // namespace mkube::scheduler::plugins
