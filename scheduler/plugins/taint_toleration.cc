#include "scheduler/plugins/taint_toleration.h"

#include "fmt/format.h"
#include "scheduler/plugins/taints.h"

namespace mkube::scheduler::plugins {

framework::Status TaintToleration::Filter(const framework::CycleState&, const api::Pod& pod,
                                          const framework::NodeInfo& node) const {
  for (const api::Taint& taint : node.node->spec().taints()) {
    if (taint.effect() != "NoSchedule" && taint.effect() != "NoExecute") continue;
    if (Tolerated(pod.spec().tolerations(), taint)) continue;
    return framework::Status::Unresolvable(
        fmt::format("node(s) had untolerated taint {{{}: {}}}", taint.key(), taint.value()));
  }
  return {};
}

}  // namespace mkube::scheduler::plugins
