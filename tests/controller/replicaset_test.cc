// The ReplicaSet (and ReplicationController) controller against the fake clientset and clock.
#include "controller/replicaset/replicaset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/internal/owner.h"
#include "tests/controller/harness.h"

namespace mkube::controller {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using testing::Harness;
using testing::Template;

api::ReplicaSet MakeRS(const std::string& name, int replicas, int min_ready = 0) {
  api::ReplicaSet rs;
  rs.mutable_metadata()->set_name(name);
  rs.mutable_metadata()->set_namespace_("default");
  rs.mutable_spec()->set_replicas(replicas);
  rs.mutable_spec()->set_min_ready_seconds(min_ready);
  (*rs.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = name;
  *rs.mutable_spec()->mutable_template_() = Template({{"app", name}});
  return rs;
}

class ReplicaSetTest : public ::testing::Test {
 protected:
  virtual ReplicaSetControllerImpl::Options Options() { return {}; }
  void SetUp() override {
    controller_ = std::make_unique<ReplicaSetControllerImpl>(
        &h_.fake, &h_.replica_sets, &h_.pods, &h_.events, &h_.clock, Options());
    h_.Start();
  }
  void TearDown() override {
    h_.StopInformers();  // no handler may reach the controller once it is gone
    controller_.reset();
  }
  api::ReplicaSet Create(const api::ReplicaSet& rs) {
    auto r = h_.fake.Create<api::ReplicaSet>("replicasets", "default", rs);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(h_.Settle());
    return *r;
  }
  // Syncs the set and waits until the caches have seen what it wrote.
  absl::Status Sync(const std::string& name) {
    absl::Status st = controller_->Sync("default/" + name);
    EXPECT_TRUE(h_.Settle());
    return st;
  }
  api::Pod MakePod(const std::string& name, const std::map<std::string, std::string>& labels,
                   const api::OwnerReference* owner = nullptr, const std::string& node = "") {
    api::Pod p;
    p.mutable_metadata()->set_name(name);
    p.mutable_spec()->set_node_name(node);
    for (const auto& [k, v] : labels) (*p.mutable_metadata()->mutable_labels())[k] = v;
    if (owner) *p.mutable_metadata()->add_owner_references() = *owner;
    auto* c = p.mutable_spec()->add_containers();
    c->set_name("c");
    c->set_image("busybox");
    auto r = h_.fake.Create<api::Pod>("pods", "default", p);
    EXPECT_TRUE(r.ok()) << r.status();
    return *r;
  }
  std::vector<std::string> PodNames() {
    std::vector<std::string> out;
    for (const auto& p : h_.Pods()) {
      if (p.metadata().deletion_timestamp().empty()) out.push_back(p.metadata().name());
    }
    return out;
  }

  Harness h_;
  std::unique_ptr<ReplicaSetControllerImpl> controller_;
};

TEST_F(ReplicaSetTest, CreatesTheMissingReplicasFromItsTemplateOwnedByIt) {
  const api::ReplicaSet rs = Create(MakeRS("web", 3));
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  const auto pods = h_.Pods();
  ASSERT_EQ(pods.size(), 3u);
  for (const auto& p : pods) {
    EXPECT_EQ(p.metadata().labels().at("app"), "web");
    EXPECT_EQ(p.metadata().generate_name(), "web-");
    EXPECT_EQ(p.spec().containers(0).image(), "soscscs/myapp:v1");
    const api::OwnerReference* ref = ControllerOf(p.metadata());
    ASSERT_NE(ref, nullptr);
    EXPECT_EQ(ref->kind(), "ReplicaSet");
    EXPECT_EQ(ref->api_version(), "apps/v1");
    EXPECT_EQ(ref->uid(), rs.metadata().uid());
    EXPECT_TRUE(ref->block_owner_deletion());
  }
  EXPECT_THAT(h_.Events(), Contains(HasSubstr("SuccessfulCreate: Created pod: web-")));
  // The status counts them once the next sync sees them.
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(h_.Get<api::ReplicaSet>("replicasets", "web").status().replicas(), 3);
  EXPECT_EQ(h_.Get<api::ReplicaSet>("replicasets", "web").status().observed_generation(), 1);
}

TEST_F(ReplicaSetTest, ExpectationsKeepASlowWatchFromCreatingTwiceUntilTheyExpire) {
  Create(MakeRS("web", 2));
  h_.pods.Stop();  // the controller sees none of the pods it makes
  ASSERT_TRUE(controller_->Sync("default/web").ok());
  EXPECT_EQ(h_.Pods().size(), 2u);
  ASSERT_TRUE(controller_->Sync("default/web").ok());
  EXPECT_EQ(h_.Pods().size(), 2u) << "created again before the first creations were observed";
  // Five minutes without the events: the controller trusts its cache again.
  h_.clock.Advance(Expectations::kTimeout + absl::Seconds(1));
  ASSERT_TRUE(controller_->Sync("default/web").ok());
  EXPECT_EQ(h_.Pods().size(), 4u);
}

TEST_F(ReplicaSetTest, CreatesInSlowStartBatchesAndStopsAtTheFirstFailure) {
  Create(MakeRS("web", 10));
  h_.fake.FailNext("create", "pods", absl::ResourceExhaustedError("quota exceeded"));
  h_.fake.ClearActions();
  EXPECT_FALSE(Sync("web").ok());
  EXPECT_EQ(h_.fake.Actions("create", "pods").size(), 1u) << "one batch of one, then stop";
  EXPECT_EQ(h_.Pods().size(), 0u);
  const auto status = h_.Get<api::ReplicaSet>("replicasets", "web").status();
  ASSERT_EQ(status.conditions_size(), 1);
  EXPECT_EQ(status.conditions(0).type(), "ReplicaFailure");
  EXPECT_EQ(status.conditions(0).reason(), "FailedCreate");
  EXPECT_THAT(status.conditions(0).message(), HasSubstr("quota exceeded"));
  EXPECT_THAT(h_.Events(), Contains(HasSubstr("FailedCreate: Error creating: quota exceeded")));
  // Creations work again: all ten, and the condition goes.
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(h_.Pods().size(), 10u);
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(h_.Get<api::ReplicaSet>("replicasets", "web").status().conditions_size(), 0);
}

class ReplicaSetBurstTest : public ReplicaSetTest {
 protected:
  ReplicaSetControllerImpl::Options Options() override { return {.burst_replicas = 4}; }
};

TEST_F(ReplicaSetBurstTest, AtMostBurstReplicasPerSync) {
  Create(MakeRS("web", 10));
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(h_.Pods().size(), 4u);
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(h_.Pods().size(), 8u);
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(h_.Pods().size(), 10u);
}

TEST_F(ReplicaSetTest, AdoptsMatchingOrphansAndIgnoresOtherControllersPods) {
  const api::ReplicaSet rs = Create(MakeRS("web", 2));
  api::OwnerReference other;
  other.set_api_version("apps/v1");
  other.set_kind("ReplicaSet");
  other.set_name("other");
  other.set_uid("another-uid");
  other.set_controller(true);
  MakePod("orphan", {{"app", "web"}});
  MakePod("theirs", {{"app", "web"}}, &other);
  MakePod("unrelated", {{"app", "db"}});
  ASSERT_TRUE(h_.Settle());
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  const auto orphan = h_.Get<api::Pod>("pods", "orphan");
  ASSERT_NE(ControllerOf(orphan.metadata()), nullptr);
  EXPECT_EQ(ControllerOf(orphan.metadata())->uid(), rs.metadata().uid());
  EXPECT_EQ(ControllerOf(h_.Get<api::Pod>("pods", "theirs").metadata())->uid(), "another-uid");
  EXPECT_EQ(h_.Get<api::Pod>("pods", "unrelated").metadata().owner_references_size(), 0);
  EXPECT_EQ(h_.Pods().size(), 4u) << "the orphan counts: one pod created, not two";
}

TEST_F(ReplicaSetTest, ReleasesAPodWhoseLabelsStopMatchingAndReplacesIt) {
  Create(MakeRS("web", 1));
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  api::Pod pod = h_.Pods().at(0);
  (*pod.mutable_metadata()->mutable_labels())["app"] = "debug";
  ASSERT_TRUE(h_.fake.Update<api::Pod>("pods", "default", pod).ok());
  ASSERT_TRUE(h_.Settle());
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(h_.Get<api::Pod>("pods", pod.metadata().name()).metadata().owner_references_size(), 0);
  EXPECT_EQ(h_.Pods().size(), 2u);
}

TEST_F(ReplicaSetTest, ReplacesAPodBeingDeletedOrFinished) {
  Create(MakeRS("web", 2));
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  auto pods = h_.Pods();
  api::Pod done = pods.at(0);
  done.mutable_status()->set_phase("Failed");
  ASSERT_TRUE(h_.fake.Update<api::Pod>("pods", "default", done, "status").ok());
  ASSERT_TRUE(h_.Settle());
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(h_.Pods().size(), 3u);
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(h_.Get<api::ReplicaSet>("replicasets", "web").status().replicas(), 2);
}

// Which pods a scale-down removes, as Kubernetes ranks them.
struct DeletionCase {
  std::string name;
  // Per pod: name -> (node, phase, ready)
  std::vector<std::tuple<std::string, std::string, std::string, bool>> pods;
  int replicas;
  std::vector<std::string> survivors;
};

class ReplicaSetDeletionTest : public ReplicaSetTest,
                               public ::testing::WithParamInterface<DeletionCase> {};

TEST_P(ReplicaSetDeletionTest, DeletesTheLeastUsefulPodsFirst) {
  const DeletionCase& c = GetParam();
  const api::ReplicaSet rs = Create(MakeRS("web", static_cast<int>(c.pods.size())));
  const api::OwnerReference ref = ControllerRef(rs, "apps/v1", "ReplicaSet");
  for (const auto& [name, node, phase, ready] : c.pods) {
    api::Pod p = MakePod(name, {{"app", "web"}}, &ref, node);
    p.mutable_status()->set_phase(phase);
    if (ready) {
      auto* cond = p.mutable_status()->add_conditions();
      cond->set_type("Ready");
      cond->set_status("True");
      cond->set_last_transition_time(api::Rfc3339(h_.clock.Now()));
    }
    ASSERT_TRUE(h_.fake.Update<api::Pod>("pods", "default", p, "status").ok());
    h_.clock.Advance(absl::Seconds(1));  // creation order is age order
  }
  api::ReplicaSet scaled = h_.Get<api::ReplicaSet>("replicasets", "web");
  scaled.mutable_spec()->set_replicas(c.replicas);
  ASSERT_TRUE(h_.fake.Update<api::ReplicaSet>("replicasets", "default", scaled).ok());
  ASSERT_TRUE(h_.Settle());
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_THAT(PodNames(), ::testing::UnorderedElementsAreArray(c.survivors));
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, ReplicaSetDeletionTest,
    ::testing::Values(
        DeletionCase{"UnscheduledBeforeScheduled",
                     {{"a", "node01", "Running", true}, {"b", "", "Pending", false}},
                     1,
                     {"a"}},
        DeletionCase{"PendingBeforeRunning",
                     {{"a", "node01", "Pending", false}, {"b", "node02", "Running", true}},
                     1,
                     {"b"}},
        DeletionCase{"NotReadyBeforeReady",
                     {{"a", "node01", "Running", false}, {"b", "node02", "Running", true}},
                     1,
                     {"b"}},
        DeletionCase{"DoubledUpBeforeAlone",
                     {{"a", "node01", "Running", true},
                      {"b", "node02", "Running", true},
                      {"c", "node02", "Running", true}},
                     2,
                     {"a", "b"}},
        DeletionCase{"NewestFirstWhenAllElseIsEqual",
                     {{"a", "node01", "Running", true}, {"b", "node02", "Running", true}},
                     1,
                     {"a"}}),
    [](const auto& info) { return info.param.name; });

TEST_F(ReplicaSetTest, AvailableOnlyAfterMinReadySeconds) {
  Create(MakeRS("web", 2, /*min_ready=*/10));
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  h_.MakeAllReady();
  ASSERT_TRUE(h_.Settle());
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  auto status = h_.Get<api::ReplicaSet>("replicasets", "web").status();
  EXPECT_EQ(status.ready_replicas(), 2);
  EXPECT_EQ(status.available_replicas(), 0);
  EXPECT_EQ(controller_->queue().Delayed(), 1u) << "looks again after minReadySeconds";
  h_.clock.Advance(absl::Seconds(10));
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  status = h_.Get<api::ReplicaSet>("replicasets", "web").status();
  EXPECT_EQ(status.available_replicas(), 2);
  EXPECT_EQ(status.fully_labeled_replicas(), 2);
}

TEST_F(ReplicaSetTest, AGoneSetLeavesNothingBehindInItsExpectations) {
  Create(MakeRS("web", 1));
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  apiserver::DeleteRequest del;
  del.set_resource("replicasets");
  del.set_namespace_("default");
  del.set_name("web");
  ASSERT_TRUE(h_.fake.Delete(del).ok());
  ASSERT_TRUE(h_.Settle());
  EXPECT_TRUE(Sync("web").ok());
  EXPECT_TRUE(controller_->expectations().Satisfied("default/web"));
}

class ReplicationControllerTest : public ::testing::Test {
 protected:
  Harness h_;
};

TEST_F(ReplicationControllerTest, KeepsItsReplicasWithAMapSelector) {
  ReplicationManager rcm(&h_.fake, &h_.replication_controllers, &h_.pods, &h_.events, &h_.clock,
                         ReplicationManager::Options{});
  h_.Start();
  api::ReplicationController rc;
  rc.mutable_metadata()->set_name("nginx");
  rc.mutable_spec()->set_replicas(3);
  (*rc.mutable_spec()->mutable_selector())["app"] = "nginx";
  *rc.mutable_spec()->mutable_template_() = Template({{"app", "nginx"}}, "nginx");
  auto made = h_.fake.Create<api::ReplicationController>("replicationcontrollers", "default", rc);
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_TRUE(h_.Settle());
  ASSERT_TRUE(rcm.Sync("default/nginx").ok());
  ASSERT_TRUE(h_.Settle());
  const auto pods = h_.Pods();
  ASSERT_EQ(pods.size(), 3u);
  for (const auto& p : pods) {
    ASSERT_NE(ControllerOf(p.metadata()), nullptr);
    EXPECT_EQ(ControllerOf(p.metadata())->kind(), "ReplicationController");
    EXPECT_EQ(ControllerOf(p.metadata())->api_version(), "v1");
  }
  h_.MakeAllReady();
  ASSERT_TRUE(h_.Settle());
  ASSERT_TRUE(rcm.Sync("default/nginx").ok());
  const auto status = h_.Get<api::ReplicationController>("replicationcontrollers", "nginx").status();
  EXPECT_EQ(status.replicas(), 3);
  EXPECT_EQ(status.ready_replicas(), 3);
  EXPECT_EQ(status.available_replicas(), 3);
  h_.StopInformers();
}

}  // namespace
}  // namespace mkube::controller
