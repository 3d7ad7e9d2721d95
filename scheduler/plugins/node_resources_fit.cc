#include "scheduler/plugins/node_resources_fit.h"

#include <vector>

#include "scheduler/framework/resources.h"

namespace mkube::scheduler::plugins {

framework::Status NodeResourcesFit::Filter(const framework::CycleState&, const api::Pod& pod,
                                           const framework::NodeInfo& node) const {
  const framework::ResourceList allocatable = framework::Allocatable(*node.node);
  std::vector<std::string> reasons;
  bool unresolvable = false;
  auto pods = allocatable.find("pods");
  if (pods != allocatable.end() &&
      static_cast<int64_t>(node.pods.size() + 1) * 1000 > pods->second) {
    reasons.push_back("Too many pods");
  }
  for (const auto& [name, want] : framework::PodRequests(pod)) {
    if (want <= 0 || name == "pods") continue;
    auto has = allocatable.find(name);
    const int64_t total = has == allocatable.end() ? 0 : has->second;
    auto used = node.requested.find(name);
    const int64_t taken = used == node.requested.end() ? 0 : used->second;
    if (want > total - taken) {
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

}  // namespace mkube::scheduler::plugins
