#pragma once

#include <vector>

#include "scheduler/plugins/node_resources_fit.h"

namespace mkube::scheduler::plugins {

// BalancedResourceAllocation: the node whose cpu and memory would be used in the most equal
// shares wins. With the pod on it, each resource's requested fraction of allocatable (at most
// 1); with two resources std = |f1 - f2| / 2 (with more, their standard deviation); the score
// is (1 - std) × 100. So a node at 50:50 scores 100 and one at 20:60 scores 80. Real requests
// count (a container without requests adds nothing), as in Kubernetes 1.32.
class BalancedAllocation final : public framework::PreScorePlugin, public framework::ScorePlugin {
 public:
  struct Args {
    std::vector<ResourceWeight> resources = {{"cpu", 1}, {"memory", 1}};
  };
  static constexpr char kName[] = "NodeResourcesBalancedAllocation";

  BalancedAllocation() = default;
  explicit BalancedAllocation(Args args) : args_(std::move(args)) {}
  std::string_view Name() const override { return kName; }
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const std::vector<const framework::NodeInfo*>& nodes,
                             const framework::Snapshot& snapshot) const override;
  int64_t Score(const framework::CycleState& state, const api::Pod& pod,
                const framework::NodeInfo& node) const override;

 private:
  Args args_;
};

}  // namespace mkube::scheduler::plugins
