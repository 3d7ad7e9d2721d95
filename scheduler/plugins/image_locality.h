#pragma once

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// ImageLocalityPriority: a node that already has the pod's images wins, the more so the
// larger they are. Each image the node has counts its size scaled by the share of nodes
// that have it (so an image everywhere does not pull pods together); the sum, clamped to
// 23 MiB .. 1000 MiB per container, maps onto 0..100. Image names without a tag mean
// ":latest".
class ImageLocality final : public framework::PreScorePlugin, public framework::ScorePlugin {
 public:
  static constexpr char kName[] = "ImageLocality";
  std::string_view Name() const override { return kName; }
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const std::vector<const framework::NodeInfo*>& nodes,
                             const framework::Snapshot& snapshot) const override;
  int64_t Score(const framework::CycleState& state, const api::Pod& pod,
                const framework::NodeInfo& node) const override;
};

}  // namespace mkube::scheduler::plugins
