#include "scheduler/plugins/taint_toleration.h"

#include "fmt/format.h"
#include "api/taints.h"

namespace mkube::scheduler::plugins {
namespace {

// The pod's tolerations that can tolerate PreferNoSchedule (that effect, or any).
struct Tolerations : framework::CycleState::Data {
  google::protobuf::RepeatedPtrField<api::Toleration> prefer_no_schedule;
};

}  // namespace

framework::Status TaintToleration::Filter(const framework::CycleState&, const api::Pod& pod,
                                          const framework::NodeInfo& node) const {
  for (const api::Taint& taint : node.node().spec().taints()) {
    if (taint.effect() != "NoSchedule" && taint.effect() != "NoExecute") continue;
    if (api::Tolerated(pod.spec().tolerations(), taint)) continue;
    return framework::Status::Unresolvable(
        fmt::format("node(s) had untolerated taint {{{}: {}}}", taint.key(), taint.value()));
  }
  return {};
}

framework::Status TaintToleration::PreScore(framework::CycleState& state, const api::Pod& pod,
                                            const std::vector<const framework::NodeInfo*>&,
                                            const framework::Snapshot&) const {
  auto t = std::make_unique<Tolerations>();
  for (const auto& toleration : pod.spec().tolerations()) {
    if (toleration.effect().empty() || toleration.effect() == "PreferNoSchedule") {
      *t->prefer_no_schedule.Add() = toleration;
    }
  }
  state.Write(kName, std::move(t));
  return {};
}

int64_t TaintToleration::Score(const framework::CycleState& state, const api::Pod& pod,
                               const framework::NodeInfo& node) const {
  const Tolerations* pre = state.Read<Tolerations>(kName);
  int64_t untolerated = 0;
  for (const api::Taint& taint : node.node().spec().taints()) {
    if (taint.effect() != "PreferNoSchedule") continue;
    if (!Tolerated(pre ? pre->prefer_no_schedule : pod.spec().tolerations(), taint)) {
      ++untolerated;
    }
  }
  return untolerated;
}

void TaintToleration::NormalizeScore(const framework::CycleState&, const api::Pod&,
                                     std::vector<int64_t>& scores) const {
  framework::DefaultNormalizeScore(true, scores);
}

}  // namespace mkube::scheduler::plugins
