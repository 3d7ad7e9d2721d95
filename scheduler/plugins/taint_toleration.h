#pragma once

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// A node's NoSchedule and NoExecute taints keep away every pod that does not tolerate them
// (PreferNoSchedule only ranks: that is the plugin's score, to come).
class TaintToleration final : public framework::FilterPlugin {
 public:
  static constexpr char kName[] = "TaintToleration";
  std::string_view Name() const override { return kName; }
  // "node(s) had untolerated taint {key: value}", for the first taint not tolerated.
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
};

}  // namespace mkube::scheduler::plugins
