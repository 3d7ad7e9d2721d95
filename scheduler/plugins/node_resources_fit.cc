#include "scheduler/plugins/node_resources_fit.h"

#include <optional>
#include <vector>

#include "scheduler/framework/resources.h"

namespace mkube::scheduler::plugins {
namespace {

struct Requests : framework::CycleState::Data {
  framework::ResourceList requests;
};

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

std::vector<Allocation> AllocationsOf(const std::vector<ResourceWeight>& resources,
                                      const api::Pod& pod, const framework::NodeInfo& node,
                                      bool non_zero) {
  std::vector<Allocation> out(resources.size());
  std::optional<framework::NonZero> pod_nz;
  std::optional<framework::ResourceList> pod_real;
  for (size_t i = 0; i < resources.size(); ++i) {
    const std::string& name = resources[i].name;
    out[i].allocatable = Find(node.allocatable(), name);
    if (non_zero && (name == "cpu" || name == "memory")) {
      if (!pod_nz) pod_nz = framework::NonZeroRequests(pod);
      out[i].requested = name == "cpu" ? node.non_zero_cpu() + pod_nz->cpu
                                       : node.non_zero_memory() + pod_nz->memory;
    } else {
      if (!pod_real) pod_real = framework::PodRequests(pod);
      out[i].requested = Find(node.requested(), name) + Find(*pod_real, name);
    }
  }
  return out;
}

framework::Status NodeResourcesFit::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                              const framework::Snapshot&) const {
  auto r = std::make_unique<Requests>();
  r->requests = framework::PodRequests(pod);
  state.Write(kName, std::move(r));
  return {};
}

framework::Status NodeResourcesFit::Filter(const framework::CycleState& state, const api::Pod& pod,
                                           const framework::NodeInfo& node) const {
  const Requests* pre = state.Read<Requests>(kName);
  Requests own;
  if (!pre) {  // run without its PreFilter
    own.requests = framework::PodRequests(pod);
    pre = &own;
  }
  const framework::ResourceList& allocatable = node.allocatable();
  std::vector<std::string> reasons;
  bool unresolvable = false;
  auto pods = allocatable.find("pods");
  if (pods != allocatable.end() &&
      static_cast<int64_t>(node.pods().size() + 1) * 1000 > pods->second) {
    reasons.push_back("Too many pods");
  }
  for (const auto& [name, want] : pre->requests) {
    if (want <= 0 || name == "pods") continue;
    const int64_t total = Find(allocatable, name);
    if (want > total - Find(node.requested(), name)) {
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

int64_t NodeResourcesFit::Score(const framework::CycleState&, const api::Pod& pod,
                                const framework::NodeInfo& node) const {
  const std::vector<Allocation> allocations = AllocationsOf(args_.resources, pod, node, true);
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
