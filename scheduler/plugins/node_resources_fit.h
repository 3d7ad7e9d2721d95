#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// A resource a resources score weighs, and how much.
struct ResourceWeight {
  std::string name;
  int64_t weight = 1;
};

// PodFitsResources: what the pod requests (cpu, memory, ephemeral-storage and any other
// resource it names, from its containers, init containers and overhead) must fit in what the
// node has allocatable minus what its pods request, and the node must have room for one more
// pod. Every shortfall is a reason ("Insufficient cpu", "Too many pods"); a request larger
// than the node's whole allocatable amount can never fit (unresolvable).
//
// Its score is LeastRequestedPriority (the default, LeastAllocated: the emptier node wins,
// per resource (allocatable - requested) × 100 / allocatable, weighted mean) or MostAllocated
// (the fuller node wins, to pack pods). The score counts 100m cpu and 200Mi memory for
// containers that request none.
class NodeResourcesFit final : public framework::PreFilterPlugin,
                               public framework::FilterPlugin,
                               public framework::PreScorePlugin,
                               public framework::ScorePlugin {
 public:
  enum class Strategy { kLeastAllocated, kMostAllocated };
  struct Args {
    Strategy strategy = Strategy::kLeastAllocated;
    std::vector<ResourceWeight> resources = {{"cpu", 1}, {"memory", 1}};
  };
  static constexpr char kName[] = "NodeResourcesFit";

  NodeResourcesFit() = default;
  explicit NodeResourcesFit(Args args) : args_(std::move(args)) {}
  std::string_view Name() const override { return kName; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) const override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  // The pod's demand, once for the nodes Score looks at.
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const std::vector<const framework::NodeInfo*>& nodes,
                             const framework::Snapshot& snapshot) const override;
  int64_t Score(const framework::CycleState& state, const api::Pod& pod,
                const framework::NodeInfo& node) const override;

 private:
  Args args_;
};

// What a resource score compares for one resource: the node's allocatable amount and what
// its pods and the new one request (in milli units).
struct Allocation {
  int64_t allocatable = 0;
  int64_t requested = 0;
};
using Allocations = absl::InlinedVector<Allocation, 4>;

// What the pod asks for, as the resource scores count it: computed once per cycle by their
// PreScore rather than for every node.
struct PodDemand : framework::CycleState::Data {
  framework::ResourceList requests;
  framework::NonZero non_zero;
};
PodDemand DemandOf(const api::Pod& pod);
// Where the cycle keeps it: NodeResourcesFit's PreFilter writes it, the scores' PreScore when
// it is not there yet (WriteDemand), so that one cycle computes it once.
inline constexpr char kPodDemandKey[] = "PodDemand";
void WriteDemand(framework::CycleState& state, const api::Pod& pod);
// The demand a PreScore wrote under `key`, or (when it did not run) computed into `scratch`.
const PodDemand& DemandIn(const framework::CycleState& state, std::string_view key,
                          const api::Pod& pod, std::optional<PodDemand>& scratch);

// `non_zero`: cpu and memory as the least-allocated score counts them (defaults for
// containers without requests); otherwise the real requests, as the balanced score uses.
Allocations AllocationsOf(const std::vector<ResourceWeight>& resources, const PodDemand& demand,
                          const framework::NodeInfo& node, bool non_zero);

}  // namespace mkube::scheduler::plugins
