#pragma once

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// A node's NoSchedule and NoExecute taints keep away every pod that does not tolerate them.
// PreferNoSchedule only ranks: the score counts the node's PreferNoSchedule taints the pod
// does not tolerate, reversed so the node with fewest has 100.
class TaintToleration final : public framework::FilterPlugin,
                              public framework::PreScorePlugin,
                              public framework::ScorePlugin {
 public:
  static constexpr char kName[] = "TaintToleration";
  std::string_view Name() const override { return kName; }
  // "node(s) had untolerated taint {key: value}", for the first taint not tolerated.
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
