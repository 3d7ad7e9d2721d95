// The node's status and lease against the fake clientset and clock: the status is written
// when it changes and once a status interval as a heartbeat, never because equal maps
// serialized differently; the lease is renewed every renew interval.
#include "agent/node/node_status.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "client/testing/fake_client.h"
#include "client/testing/fake_clock.h"
#include "tests/agent/fake_registry.h"
#include "tests/util/process.h"

namespace mkube::agent::node {
namespace {

class NodeStatusTest : public ::testing::Test {
 protected:
  NodeStatusTest() {
    std::ofstream(dir_.Sub("busybox.tar"), std::ios::binary)
        << agent::image::ImageArchive({"busybox:latest"});
    EXPECT_TRUE(images_.ServeArchive(dir_.Sub("busybox.tar")).ok());
    options_.name = "node01";
    options_.ip = "127.1.2.1";
    options_.labels = {{"disktype", "ssd"}, {"zone", "a"}, {"rack", "r1"}};
    options_.capacity = {{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"},
                         {"ephemeral-storage", "10Gi"}};
    api::Taint taint;
    taint.set_key("node-role.kubernetes.io/master");
    taint.set_effect("NoSchedule");
    options_.taints = {taint};
  }
  size_t StatusWrites() { return fake_.Actions("update", "nodes").size(); }
  size_t LeaseWrites() {
    return fake_.Actions("update", "leases").size() + fake_.Actions("create", "leases").size();
  }

  mkube::testing::TempDir dir_;
  client::testing::FakeClock clock_;
  client::testing::FakeClient fake_{&clock_};
  client::EventRecorder events_{&fake_, "kubelet", "node01", 1000, &clock_};
  runtime::ImageStore images_{runtime::OciOptions{.dir = dir_.Sub("node/oci")}};
  NodeOptions options_;
};

TEST_F(NodeStatusTest, RegistersTheNodeWithItsLabelsTaintsAndStatus) {
  NodeStatusManager node(&fake_, &images_, &events_, options_, &clock_);
  ASSERT_TRUE(node.Register().ok());
  auto got = fake_.Get<api::Node>("nodes", "", "node01");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->metadata().labels().at("kubernetes.io/hostname"), "node01");
  EXPECT_EQ(got->metadata().labels().at("disktype"), "ssd");
  ASSERT_EQ(got->spec().taints_size(), 1);
  EXPECT_EQ(got->spec().taints(0).effect(), "NoSchedule");
  EXPECT_EQ(got->status().capacity().at("cpu"), "2");
  EXPECT_EQ(got->status().allocatable().at("memory"), "4Gi");
  bool ready = false;
  for (const auto& c : got->status().conditions()) ready |= c.type() == "Ready" && c.status() == "True";
  EXPECT_TRUE(ready);
  EXPECT_TRUE(fake_.Get<api::Lease>("leases", "kube-node-lease", "node01").ok())
      << "a registered node has its Lease at once";
}

TEST_F(NodeStatusTest, TheStatusIsWrittenWhenItChangesAndOnceAnIntervalOtherwise) {
  NodeStatusManager node(&fake_, &images_, &events_, options_, &clock_);
  ASSERT_TRUE(node.Register().ok());
  const size_t registered = StatusWrites();
  // Every 2 s for 58 s nothing changes: no write (the maps in it are equal however they
  // are ordered).
  for (int i = 0; i < 29; ++i) {
    node.Sync();
    clock_.Advance(absl::Seconds(2));
  }
  EXPECT_EQ(StatusWrites(), registered) << "rewritten although nothing changed";
  // At a minute, the heartbeat.
  clock_.Advance(absl::Seconds(2));
  node.Sync();
  EXPECT_EQ(StatusWrites(), registered + 1);
  // A new image on the node changes the status: written at the next pass.
  ASSERT_TRUE(images_.Pull("busybox", false).ok());
  clock_.Advance(absl::Seconds(2));
  node.Sync();
  EXPECT_EQ(StatusWrites(), registered + 2);
  auto got = fake_.Get<api::Node>("nodes", "", "node01");
  ASSERT_EQ(got->status().images_size(), 1);
  EXPECT_EQ(got->status().images(0).names(0), "busybox:latest");
  clock_.Advance(absl::Seconds(2));
  node.Sync();
  EXPECT_EQ(StatusWrites(), registered + 2);
}

TEST_F(NodeStatusTest, TheLeaseIsRenewedEveryRenewIntervalAndTakenBackAfterAConflict) {
  NodeStatusManager node(&fake_, &images_, &events_, options_, &clock_);
  ASSERT_TRUE(node.Register().ok());
  node.Sync();
  auto lease = fake_.Get<api::Lease>("leases", "kube-node-lease", "node01");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->spec().holder_identity(), "node01");
  EXPECT_EQ(lease->spec().lease_duration_seconds(), 40);
  for (int i = 0; i < 15; ++i) {  // 30 s in 2 s steps: renewed at 10, 20, 30
    clock_.Advance(absl::Seconds(2));
    node.Sync();
  }
  EXPECT_EQ(LeaseWrites(), 4u);
  // Someone else writes the lease: the renewal conflicts, then reads it again and succeeds.
  api::Lease other = *fake_.Get<api::Lease>("leases", "kube-node-lease", "node01");
  other.mutable_spec()->set_holder_identity("intruder");
  ASSERT_TRUE(fake_.Update("leases", "kube-node-lease", other).ok());
  clock_.Advance(absl::Seconds(10));
  node.Sync();
  clock_.Advance(absl::Seconds(10));
  node.Sync();
  lease = fake_.Get<api::Lease>("leases", "kube-node-lease", "node01");
  EXPECT_EQ(lease->spec().holder_identity(), "node01");
}

TEST_F(NodeStatusTest, TheLoopRunsOnItsClock) {
  NodeStatusManager node(&fake_, &images_, &events_, options_, &clock_);
  ASSERT_TRUE(node.Register().ok());
  node.Start();
  ASSERT_TRUE(clock_.WaitForWaiters(1));
  EXPECT_EQ(LeaseWrites(), 1u) << "created at once";
  // Ten seconds on the node's clock, however little real time: the lease is renewed.
  const size_t updates = fake_.Actions("update").size();
  clock_.Advance(absl::Seconds(10));
  EXPECT_TRUE(fake_.WaitForActions("update", updates + 1));
  EXPECT_EQ(fake_.Actions("update", "leases").size(), 1u);
  node.Stop();
}

}  // namespace
}  // namespace mkube::agent::node
