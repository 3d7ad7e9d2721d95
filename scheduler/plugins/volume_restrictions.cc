#include "scheduler/plugins/volume_restrictions.h"

#include <algorithm>

namespace mkube::scheduler::plugins {
namespace {

bool IsDisk(const api::Volume& v) {
  return v.has_gce_persistent_disk() || v.has_aws_elastic_block_store() || v.has_rbd() ||
         v.has_iscsi();
}

const std::string& PoolOf(const api::RBDVolumeSource& rbd) {
  static const std::string kDefault = "rbd";
  return rbd.pool().empty() ? kDefault : rbd.pool();
}

bool ShareMonitor(const api::RBDVolumeSource& a, const api::RBDVolumeSource& b) {
  return std::any_of(a.monitors().begin(), a.monitors().end(), [&](const std::string& m) {
    return std::find(b.monitors().begin(), b.monitors().end(), m) != b.monitors().end();
  });
}

}  // namespace

bool VolumesConflict(const api::Volume& a, const api::Volume& b) {
  if (a.has_gce_persistent_disk() && b.has_gce_persistent_disk()) {
    const auto &x = a.gce_persistent_disk(), &y = b.gce_persistent_disk();
    return x.pd_name() == y.pd_name() && !(x.read_only() && y.read_only());
  }
  if (a.has_aws_elastic_block_store() && b.has_aws_elastic_block_store()) {
    return a.aws_elastic_block_store().volume_id() == b.aws_elastic_block_store().volume_id();
  }
  if (a.has_iscsi() && b.has_iscsi()) {
    return a.iscsi().iqn() == b.iscsi().iqn() && !(a.iscsi().read_only() && b.iscsi().read_only());
  }
  if (a.has_rbd() && b.has_rbd()) {
    const auto &x = a.rbd(), &y = b.rbd();
    return ShareMonitor(x, y) && PoolOf(x) == PoolOf(y) && x.image() == y.image() &&
           !(x.read_only() && y.read_only());
  }
  return false;
}

framework::Status VolumeRestrictions::PreFilter(framework::CycleState&, const api::Pod& pod,
                                                const framework::Snapshot&) const {
  const bool disks = std::any_of(pod.spec().volumes().begin(), pod.spec().volumes().end(), IsDisk);
  return disks ? framework::Status() : framework::Status::Skip();
}

framework::Status VolumeRestrictions::Filter(const framework::CycleState&, const api::Pod& pod,
                                             const framework::NodeInfo& node) const {
  for (const auto& v : pod.spec().volumes()) {
    if (!IsDisk(v)) continue;
    for (const auto& placed : node.pods()) {
      for (const auto& w : placed->spec().volumes()) {
        if (VolumesConflict(v, w)) return framework::Status::Unschedulable(kReason);
      }
    }
  }
  return {};
}

}  // namespace mkube::scheduler::plugins
