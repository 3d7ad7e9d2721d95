#pragma once

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// PodFitsHostPorts: a hostPort is taken on its node per protocol (TCP when unset) and host IP;
// a wildcard host IP (unset, 0.0.0.0) takes the port on every address.
class NodePorts final : public framework::PreFilterPlugin, public framework::FilterPlugin {
 public:
  static constexpr char kName[] = "NodePorts";
  static constexpr char kReason[] = "node(s) didn't have free ports for the requested pod ports";
  std::string_view Name() const override { return kName; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) const override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
};

}  // namespace mkube::scheduler::plugins
