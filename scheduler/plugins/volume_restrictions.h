#pragma once

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// NoDiskConflict: a network disk attached read-write to one node cannot be used by another
// pod there. The same GCE persistent disk (pdName), RBD image (pool, image and a shared
// monitor) or iSCSI target (IQN) conflicts unless both pods mount it read-only; the same AWS
// EBS volume (volumeID) always conflicts.
class VolumeRestrictions final : public framework::PreFilterPlugin, public framework::FilterPlugin {
 public:
  static constexpr char kName[] = "VolumeRestrictions";
  static constexpr char kReason[] = "node(s) had no available disk";
  std::string_view Name() const override { return kName; }
  // Skips pods without such volumes.
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) const override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
};

// Whether two volumes are the same disk and cannot both be mounted.
bool VolumesConflict(const api::Volume& a, const api::Volume& b);

}  // namespace mkube::scheduler::plugins
