#pragma once

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// A cordoned node (spec.unschedulable) takes only pods that tolerate its
// node.kubernetes.io/unschedulable:NoSchedule taint.
class NodeUnschedulable final : public framework::FilterPlugin {
 public:
  static constexpr char kName[] = "NodeUnschedulable";
  static constexpr char kReason[] = "node(s) were unschedulable";
  std::string_view Name() const override { return kName; }
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
};

}  // namespace mkube::scheduler::plugins
