#include "scheduler/plugins/node_resources_fit.h"

#include <optional>
#include <vector>

#include "scheduler/framework/resources.h"

namespace mkube::scheduler::plugins {
namespace {

int64_t Find(const framework::ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  return it == list.end() ? 0 : it->second;
}

int64_t LeastRequested(const Allocation& a) {
  if (a.requested > a.allocatable) return 0;
  return (a.allocatable - a.requested) * framework::kMaxNodeScore / a.allocatable;
}

int64_t MostRequested(const Allocation& a) {
  if (a.requested > a.allocatable) return framework::kMaxNodeScore;
  return a.requested * framework::kMaxNodeScore / a.allocatable;
}

}  // namespace

PodDemand DemandOf(const api::Pod& pod) {
  PodDemand d;
  d.requests = framework::PodRequests(pod);
  d.non_zero = framework::NonZeroRequests(pod);
  return d;
}

void WriteDemand(framework::CycleState& state, const api::Pod& pod) {
  if (!state.Read<PodDemand>(kPodDemandKey)) {
    state.Write(kPodDemandKey, std::make_unique<PodDemand>(DemandOf(pod)));
  }
}

const PodDemand& DemandIn(const framework::CycleState& state, std::string_view key,
                          const api::Pod& pod, std::optional<PodDemand>& scratch) {
  if (const PodDemand* d = state.Read<PodDemand>(key)) return *d;
  return scratch.emplace(DemandOf(pod));
}

Allocations AllocationsOf(const std::vector<ResourceWeight>& resources, const PodDemand& demand,
                          const framework::NodeInfo& node, bool non_zero) {
  Allocations out(resources.size());
  for (size_t i = 0; i < resources.size(); ++i) {
    const std::string& name = resources[i].name;
    out[i].allocatable = node.AllocatableOf(name);
    if (non_zero && (name == "cpu" || name == "memory")) {
      out[i].requested = name == "cpu" ? node.non_zero_cpu() + demand.non_zero.cpu
                                       : node.non_zero_memory() + demand.non_zero.memory;
    } else {
      out[i].requested = node.RequestedOf(name) + Find(demand.requests, name);
    }
  }
  return out;
}

framework::Status NodeResourcesFit::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                              const framework::Snapshot&) const {
  state.Write(kPodDemandKey, std::make_unique<PodDemand>(DemandOf(pod)));
  return {};
}

framework::Status NodeResourcesFit::Filter(const framework::CycleState& state, const api::Pod& pod,
                                           const framework::NodeInfo& node) const {
  std::optional<PodDemand> scratch;  // run without its PreFilter
  const PodDemand* pre = &DemandIn(state, kPodDemandKey, pod, scratch);
  std::vector<std::string> reasons;
  bool unresolvable = false;
  if (node.limits_pods() &&
      static_cast<int64_t>(node.pods().size() + 1) * 1000 > node.AllocatableOf("pods")) {
    reasons.push_back("Too many pods");
  }
  for (const auto& [name, want] : pre->requests) {
    if (want <= 0 || name == "pods") continue;
    const int64_t total = node.AllocatableOf(name);
    if (want > total - node.RequestedOf(name)) {
      reasons.push_back("Insufficient " + name);
      unresolvable |= want > total;
    }
  }
  if (reasons.empty()) return {};
  framework::Status st = unresolvable ? framework::Status::Unresolvable(reasons[0])
                                      : framework::Status::Unschedulable(reasons[0]);
  for (size_t i = 1; i < reasons.size(); ++i) st.add_reason(reasons[i]);
  return st;
}

framework::Status NodeResourcesFit::PreScore(framework::CycleState& state, const api::Pod& pod,
                                             const std::vector<const framework::NodeInfo*>&,
                                             const framework::Snapshot&) const {
  WriteDemand(state, pod);
  return {};
}

int64_t NodeResourcesFit::Score(const framework::CycleState& state, const api::Pod& pod,
                                const framework::NodeInfo& node) const {
  std::optional<PodDemand> scratch;
  const Allocations allocations =
      AllocationsOf(args_.resources, DemandIn(state, kPodDemandKey, pod, scratch), node, true);
  int64_t sum = 0, weights = 0;
  for (size_t i = 0; i < allocations.size(); ++i) {
    if (allocations[i].allocatable == 0) continue;  // the node has none: not weighed
    const int64_t score = args_.strategy == Strategy::kLeastAllocated
                              ? LeastRequested(allocations[i])
                              : MostRequested(allocations[i]);
    sum += score * args_.resources[i].weight;
    weights += args_.resources[i].weight;
  }
  return weights == 0 ? 0 : sum / weights;
}

}  // namespace mkube::scheduler::plugins
