#pragma once

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// PodFitsHost: a pod that names a node (spec.nodeName) fits only that node.
class NodeName final : public framework::FilterPlugin {
 public:
  static constexpr char kName[] = "NodeName";
  static constexpr char kReason[] = "node(s) didn't match the requested node name";
  std::string_view Name() const override { return kName; }
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override {
    if (pod.spec().node_name().empty() || pod.spec().node_name() == node.name()) return {};
    return framework::Status::Unresolvable(kReason);
  }
};

}  // namespace mkube::scheduler::plugins
