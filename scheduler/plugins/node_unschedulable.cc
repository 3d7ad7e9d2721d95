#include "scheduler/plugins/node_unschedulable.h"

#include "api/taints.h"

namespace mkube::scheduler::plugins {

framework::Status NodeUnschedulable::Filter(const framework::CycleState&, const api::Pod& pod,
                                            const framework::NodeInfo& node) const {
  if (!node.unschedulable()) return {};
  api::Taint cordon;
  cordon.set_key("node.kubernetes.io/unschedulable");
  cordon.set_effect("NoSchedule");
  if (api::Tolerated(pod.spec().tolerations(), cordon)) return {};
  return framework::Status::Unresolvable(kReason);
}

}  // namespace mkube::scheduler::plugins
