// NoDiskConflict over the volume kinds Kubernetes checks.
#include "scheduler/plugins/volume_restrictions.h"

#include <gtest/gtest.h>

#include "tests/scheduler/filter_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using framework::Code;
using testing::MakeNode;
using testing::MakePod;
using testing::RunFilterTable;

constexpr char kReason[] = "node(s) had no available disk";

api::Volume Gce(const std::string& name, bool read_only) {
  api::Volume v;
  v.set_name("disk");
  v.mutable_gce_persistent_disk()->set_pd_name(name);
  v.mutable_gce_persistent_disk()->set_read_only(read_only);
  return v;
}

api::Volume Ebs(const std::string& id, bool read_only) {
  api::Volume v;
  v.set_name("disk");
  v.mutable_aws_elastic_block_store()->set_volume_id(id);
  v.mutable_aws_elastic_block_store()->set_read_only(read_only);
  return v;
}

api::Volume Rbd(std::vector<std::string> monitors, const std::string& pool,
                const std::string& image, bool read_only) {
  api::Volume v;
  v.set_name("disk");
  for (const auto& m : monitors) v.mutable_rbd()->add_monitors(m);
  v.mutable_rbd()->set_pool(pool);
  v.mutable_rbd()->set_image(image);
  v.mutable_rbd()->set_read_only(read_only);
  return v;
}

api::Volume Iscsi(const std::string& iqn, bool read_only) {
  api::Volume v;
  v.set_name("disk");
  v.mutable_iscsi()->set_target_portal("10.0.0.1:3260");
  v.mutable_iscsi()->set_iqn(iqn);
  v.mutable_iscsi()->set_read_only(read_only);
  return v;
}

framework::NodeInfo With(const api::Volume& v) {
  return MakeNode("node01").Pod(MakePod("placed").Volume(v).Obj()).Info();
}

TEST(VolumeRestrictions, TheSameDiskConflictsUnlessAllReadOnly) {
  constexpr Code kOk = Code::kSuccess, kNo = Code::kUnschedulable;
  RunFilterTable(
      VolumeRestrictions(),
      {
          {"GCE PD read-write on both", MakePod().Volume(Gce("pd", false)).Obj(),
           With(Gce("pd", false)), kNo, kReason},
          {"GCE PD read-write here, read-only there", MakePod().Volume(Gce("pd", false)).Obj(),
           With(Gce("pd", true)), kNo, kReason},
          {"GCE PD read-only on both", MakePod().Volume(Gce("pd", true)).Obj(),
           With(Gce("pd", true)), kOk, ""},
          {"another GCE PD", MakePod().Volume(Gce("pd2", false)).Obj(), With(Gce("pd", false)), kOk,
           ""},
          {"EBS: the same volume always conflicts", MakePod().Volume(Ebs("vol", true)).Obj(),
           With(Ebs("vol", true)), kNo, kReason},
          {"EBS: another volume", MakePod().Volume(Ebs("vol2", false)).Obj(),
           With(Ebs("vol", false)), kOk, ""},
          {"RBD: a shared monitor, the same pool (default rbd) and image",
           MakePod().Volume(Rbd({"a", "b"}, "", "img", false)).Obj(),
           With(Rbd({"b", "c"}, "rbd", "img", false)), kNo, kReason},
          {"RBD: no shared monitor", MakePod().Volume(Rbd({"a"}, "", "img", false)).Obj(),
           With(Rbd({"c"}, "", "img", false)), kOk, ""},
          {"RBD: another pool", MakePod().Volume(Rbd({"a"}, "p1", "img", false)).Obj(),
           With(Rbd({"a"}, "p2", "img", false)), kOk, ""},
          {"RBD: read-only on both", MakePod().Volume(Rbd({"a"}, "", "img", true)).Obj(),
           With(Rbd({"a"}, "", "img", true)), kOk, ""},
          {"iSCSI: the same IQN read-write", MakePod().Volume(Iscsi("iqn.x", false)).Obj(),
           With(Iscsi("iqn.x", true)), kNo, kReason},
          {"iSCSI: read-only on both", MakePod().Volume(Iscsi("iqn.x", true)).Obj(),
           With(Iscsi("iqn.x", true)), kOk, ""},
          {"different kinds never conflict", MakePod().Volume(Gce("vol", false)).Obj(),
           With(Ebs("vol", false)), kOk, ""},
      });
}

TEST(VolumeRestrictions, PodsWithoutDisksAreSkipped) {
  framework::CycleState state;
  framework::Snapshot snapshot;
  api::Volume empty_dir;
  empty_dir.set_name("scratch");
  empty_dir.mutable_empty_dir();
  EXPECT_TRUE(
      VolumeRestrictions().PreFilter(state, MakePod().Volume(empty_dir).Obj(), snapshot).skip());
  EXPECT_TRUE(VolumeRestrictions()
                  .PreFilter(state, MakePod().Volume(Ebs("v", false)).Obj(), snapshot)
                  .ok());
}

}  // namespace
}  // namespace mkube::scheduler::plugins
