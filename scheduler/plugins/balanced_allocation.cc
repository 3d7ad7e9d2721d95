#include "scheduler/plugins/balanced_allocation.h"

#include <cmath>

namespace mkube::scheduler::plugins {

framework::Status BalancedAllocation::PreScore(framework::CycleState& state, const api::Pod& pod,
                                               const std::vector<const framework::NodeInfo*>&,
                                               const framework::Snapshot&) const {
  WriteDemand(state, pod);
  return {};
}

int64_t BalancedAllocation::Score(const framework::CycleState& state, const api::Pod& pod,
                                  const framework::NodeInfo& node) const {
  absl::InlinedVector<double, 4> fractions;
  double total = 0;
  std::optional<PodDemand> scratch;
  const PodDemand& demand = DemandIn(state, kPodDemandKey, pod, scratch);
  for (const Allocation& a : AllocationsOf(args_.resources, demand, node, false)) {
    if (a.allocatable == 0) continue;
    const double f = std::min(1.0, static_cast<double>(a.requested) / a.allocatable);
    fractions.push_back(f);
    total += f;
  }
  double std = 0;
  if (fractions.size() == 2) {
    std = std::abs(fractions[0] - fractions[1]) / 2;
  } else if (fractions.size() > 2) {
    const double mean = total / fractions.size();
    double sum = 0;
    for (double f : fractions) sum += (f - mean) * (f - mean);
    std = std::sqrt(sum / fractions.size());
  }
  return static_cast<int64_t>((1 - std) * framework::kMaxNodeScore);
}

}  // namespace mkube::scheduler::plugins
