// The taint eviction controller against the fake clientset and clock: untolerated NoExecute
// taints evict at once, tolerationSeconds delay it, a taint removed in time cancels it, a
// toleration without seconds keeps the pod for ever (the seeds' cht=mycht:NoExecute cases).
#include "controller/nodelifecycle/taint_eviction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/controller/harness.h"

namespace mkube::controller::nodelifecycle {
namespace {

using ::testing::Contains;
using testing::Harness;

class TaintEvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ = std::make_unique<TaintEvictionController>(&h_.fake, &h_.nodes, &h_.pods,
                                                            &h_.events, &h_.clock);
    api::Node n;
    n.mutable_metadata()->set_name("node02");
    ASSERT_TRUE(h_.fake.Create<api::Node>("nodes", "", n).ok());
    h_.Start();
  }
  void TearDown() override {
    h_.StopInformers();  // no handler may reach the controller once it is gone
    controller_.reset();
  }
  // A pod on node02 tolerating cht=mycht:NoExecute for `seconds` (-1: no toleration; 0:
  // without tolerationSeconds).
  void MakePod(const std::string& name, int seconds) {
    api::Pod p;
    p.mutable_metadata()->set_name(name);
    p.mutable_spec()->set_node_name("node02");
    *p.mutable_spec()->add_containers() = testing::Template({}).spec().containers(0);
    if (seconds >= 0) {
      auto* t = p.mutable_spec()->add_tolerations();
      t->set_key("cht");
      t->set_operator_("Equal");
      t->set_value("mycht");
      t->set_effect("NoExecute");
      if (seconds > 0) t->set_toleration_seconds(seconds);
    }
    ASSERT_TRUE(h_.fake.Create<api::Pod>("pods", "default", p).ok());
  }
  void Taint(bool on) {
    auto n = h_.Get<api::Node>("nodes", "node02", "");
    n.mutable_spec()->clear_taints();
    if (on) {
      auto* t = n.mutable_spec()->add_taints();
      t->set_key("cht");
      t->set_value("mycht");
      t->set_effect("NoExecute");
    }
    ASSERT_TRUE(h_.fake.Update<api::Node>("nodes", "", n).ok());
    ASSERT_TRUE(h_.Settle());
  }
  void SyncNode() {
    ASSERT_EQ(controller_->Sync("node/node02"), absl::OkStatus());
    ASSERT_TRUE(h_.Settle());
  }
  bool Evicted(const std::string& name) {
    auto p = h_.fake.Get<api::Pod>("pods", "default", name);
    return !p.ok() || !p->metadata().deletion_timestamp().empty();
  }

  Harness h_;
  std::unique_ptr<TaintEvictionController> controller_;
};

TEST_F(TaintEvictionTest, SeedsNoExecuteEvictsWhatDoesNotTolerateItAtOnce) {
  MakePod("plain", -1);
  MakePod("forever", 0);
  MakePod("hour", 3600);
  ASSERT_TRUE(h_.Settle());
  Taint(true);
  SyncNode();
  EXPECT_TRUE(Evicted("plain"));
  EXPECT_FALSE(Evicted("forever"));
  EXPECT_FALSE(Evicted("hour"));
  const auto plain = h_.Get<api::Pod>("pods", "plain");
  bool marked = false;
  for (const auto& c : plain.status().conditions()) {
    marked |= c.type() == "DisruptionTarget" && c.reason() == "DeletionByTaintManager";
  }
  EXPECT_TRUE(marked);
  EXPECT_THAT(h_.Events(), Contains("TaintManagerEviction: Marking for deletion Pod default/plain"));
  // An hour later the one that tolerated it for an hour goes; the other stays.
  h_.clock.Advance(absl::Seconds(3600));
  ASSERT_EQ(controller_->Sync("pod/default/hour"), absl::OkStatus());
  EXPECT_TRUE(Evicted("hour"));
  EXPECT_FALSE(Evicted("forever"));
}

TEST_F(TaintEvictionTest, ATaintRemovedInTimeCancelsTheEviction) {
  MakePod("short", 30);
  ASSERT_TRUE(h_.Settle());
  Taint(true);
  SyncNode();
  EXPECT_EQ(controller_->queue().Delayed(), 1u) << "looks again in 30 s";
  h_.clock.Advance(absl::Seconds(20));
  Taint(false);
  SyncNode();
  EXPECT_THAT(h_.Events(),
              Contains("TaintManagerEviction: Cancelling deletion of Pod default/short"));
  h_.clock.Advance(absl::Seconds(20));
  ASSERT_EQ(controller_->Sync("pod/default/short"), absl::OkStatus());
  EXPECT_FALSE(Evicted("short"));
  // Tainted again: the 30 s start over.
  Taint(true);
  SyncNode();
  h_.clock.Advance(absl::Seconds(29));
  ASSERT_EQ(controller_->Sync("pod/default/short"), absl::OkStatus());
  EXPECT_FALSE(Evicted("short"));
  h_.clock.Advance(absl::Seconds(1));
  ASSERT_EQ(controller_->Sync("pod/default/short"), absl::OkStatus());
  EXPECT_TRUE(Evicted("short"));
}

}  // namespace
}  // namespace mkube::controller::nodelifecycle
