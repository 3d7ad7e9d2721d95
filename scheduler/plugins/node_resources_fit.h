#pragma once

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// PodFitsResources: what the pod requests (cpu, memory, ephemeral-storage and any other
// resource it names, from its containers, init containers and overhead) must fit in what the
// node has allocatable minus what its pods request, and the node must have room for one more
// pod. Every shortfall is a reason ("Insufficient cpu", "Too many pods"); a request larger
// than the node's whole allocatable amount can never fit (unresolvable). The least-allocated
// score is to come.
class NodeResourcesFit final : public framework::FilterPlugin {
 public:
  static constexpr char kName[] = "NodeResourcesFit";
  std::string_view Name() const override { return kName; }
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
};

}  // namespace mkube::scheduler::plugins
