// The deployment controller against the fake clientset and clock. The ReplicaSet controller
// does not run here: each test plays its part by writing the ReplicaSets' status (CatchUp).
#include "controller/deployment/deployment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "controller/internal/owner.h"
#include "controller/internal/template_hash.h"
#include "tests/controller/harness.h"

namespace mkube::controller::deployment {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using testing::Harness;
using testing::Template;

class DeploymentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ = std::make_unique<DeploymentController>(&h_.fake, &h_.deployments,
                                                         &h_.replica_sets, &h_.pods, &h_.events,
                                                         &h_.clock);
    h_.Start();
  }
  void TearDown() override {
    h_.StopInformers();  // no handler may reach the controller once it is gone
    controller_.reset();
  }

  api::Deployment Create(const std::string& name, int replicas,
                         const std::string& image = "soscscs/myapp:v1",
                         const std::string& strategy = "RollingUpdate") {
    api::Deployment d;
    d.mutable_metadata()->set_name(name);
    d.mutable_spec()->set_replicas(replicas);
    d.mutable_spec()->mutable_strategy()->set_type(strategy);
    (*d.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = name;
    *d.mutable_spec()->mutable_template_() = Template({{"app", name}}, image);
    auto r = h_.fake.Create<api::Deployment>("deployments", "default", d);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(h_.Settle());
    return *r;
  }
  // Changes the deployment as a user would (set image, scale, pause).
  void Edit(const std::string& name, const std::function<void(api::Deployment*)>& change) {
    api::Deployment d = h_.Get<api::Deployment>("deployments", name);
    change(&d);
    auto r = h_.fake.Update<api::Deployment>("deployments", "default", d);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(h_.Settle());
  }
  absl::Status Sync(const std::string& name) {
    absl::Status st = controller_->Sync("default/" + name);
    EXPECT_TRUE(h_.Settle());
    return st;
  }
  // Plays the ReplicaSet controller: every set has its pods, available unless named.
  void CatchUp(const std::set<std::string>& unavailable_images = {}) {
    for (auto rs : h_.List<api::ReplicaSet>("replicasets")) {
      const int n = rs.spec().replicas();
      const bool down =
          unavailable_images.contains(rs.spec().template_().spec().containers(0).image());
      rs.mutable_status()->set_replicas(n);
      rs.mutable_status()->set_ready_replicas(down ? 0 : n);
      rs.mutable_status()->set_available_replicas(down ? 0 : n);
      rs.mutable_status()->set_observed_generation(rs.metadata().generation());
      ASSERT_TRUE(h_.fake.Update<api::ReplicaSet>("replicasets", "default", rs, "status").ok());
    }
    ASSERT_TRUE(h_.Settle());
  }
  // Spec replicas by image.
  std::map<std::string, int> Sizes() {
    std::map<std::string, int> out;
    for (const auto& rs : h_.List<api::ReplicaSet>("replicasets")) {
      out[rs.spec().template_().spec().containers(0).image()] = rs.spec().replicas();
    }
    return out;
  }
  api::ReplicaSet ByImage(const std::string& image) {
    for (const auto& rs : h_.List<api::ReplicaSet>("replicasets")) {
      if (rs.spec().template_().spec().containers(0).image() == image) return rs;
    }
    return {};
  }
  std::string Condition(const std::string& name, const std::string& type) {
    const auto d = h_.Get<api::Deployment>("deployments", name);
    const api::Condition* c = FindCondition(d.status(), type);
    return c ? c->status() + " " + c->reason() + ": " + c->message() : "";
  }

  Harness h_;
  std::unique_ptr<DeploymentController> controller_;
};

TEST_F(DeploymentTest, ANewDeploymentMakesOneReplicaSetNamedByItsTemplateHash) {
  const api::Deployment d = Create("myapp", 3);
  ASSERT_EQ(Sync("myapp"), absl::OkStatus());
  const auto sets = h_.List<api::ReplicaSet>("replicasets");
  ASSERT_EQ(sets.size(), 1u);
  const api::ReplicaSet& rs = sets[0];
  const std::string hash = rs.metadata().labels().at(kPodTemplateHash);
  EXPECT_EQ(rs.metadata().name(), "myapp-" + hash);
  EXPECT_EQ(hash, TemplateHash(d.spec().template_(), std::nullopt));
  EXPECT_EQ(rs.spec().replicas(), 3);
  EXPECT_EQ(rs.spec().selector().match_labels().at(kPodTemplateHash), hash);
  EXPECT_EQ(rs.spec().template_().metadata().labels().at(kPodTemplateHash), hash);
  EXPECT_EQ(rs.metadata().annotations().at(kRevision), "1");
  EXPECT_EQ(rs.metadata().annotations().at(kDesiredReplicas), "3");
  EXPECT_EQ(rs.metadata().annotations().at(kMaxReplicas), "4");
  ASSERT_NE(ControllerOf(rs.metadata()), nullptr);
  EXPECT_EQ(ControllerOf(rs.metadata())->uid(), d.metadata().uid());
  EXPECT_THAT(Condition("myapp", "Progressing"),
              HasSubstr("True NewReplicaSetCreated: Created new replica set \"myapp-" + hash));
  EXPECT_THAT(h_.Events(), Contains("ScalingReplicaSet: Scaled up replica set myapp-" + hash +
                                    " from 0 to 3"));
  // Once its pods are available: complete, with the revision on the deployment.
  CatchUp();
  ASSERT_EQ(Sync("myapp"), absl::OkStatus());
  const auto done = h_.Get<api::Deployment>("deployments", "myapp");
  EXPECT_EQ(done.metadata().annotations().at(kRevision), "1");
  EXPECT_EQ(done.status().replicas(), 3);
  EXPECT_EQ(done.status().updated_replicas(), 3);
  EXPECT_EQ(done.status().available_replicas(), 3);
  EXPECT_EQ(done.status().observed_generation(), done.metadata().generation());
  EXPECT_THAT(Condition("myapp", "Available"), HasSubstr("True MinimumReplicasAvailable"));
  EXPECT_THAT(Condition("myapp", "Progressing"),
              HasSubstr("True NewReplicaSetAvailable: ReplicaSet \"myapp-" + hash +
                        "\" has successfully progressed."));
}

TEST_F(DeploymentTest, RollingUpdateNeverGoesBelowAvailabilityNorAboveTheSurge) {
  Create("myapp", 3);  // maxSurge 1, maxUnavailable 0
  ASSERT_EQ(Sync("myapp"), absl::OkStatus());
  CatchUp();
  ASSERT_EQ(Sync("myapp"), absl::OkStatus());
  Edit("myapp", [](api::Deployment* d) {
    d->mutable_spec()->mutable_template_()->mutable_spec()->mutable_containers(0)->set_image(
        "soscscs/myapp:v2");
  });
  std::vector<std::pair<int, int>> steps;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(Sync("myapp"), absl::OkStatus());
    auto sizes = Sizes();
    steps.emplace_back(sizes["soscscs/myapp:v1"], sizes["soscscs/myapp:v2"]);
    EXPECT_LE(sizes["soscscs/myapp:v1"] + sizes["soscscs/myapp:v2"], 4) << "above the surge";
    // What is available before the sets catch up: the old set's status still counts.
    CatchUp();
    if (sizes["soscscs/myapp:v2"] == 3 && sizes["soscscs/myapp:v1"] == 0) break;
  }
  const std::vector<std::pair<int, int>> want = {{3, 1}, {2, 1}, {2, 2}, {1, 2}, {1, 3}, {0, 3}};
  EXPECT_EQ(steps, want);
  ASSERT_EQ(Sync("myapp"), absl::OkStatus());
  const auto d = h_.Get<api::Deployment>("deployments", "myapp");
  EXPECT_EQ(d.metadata().annotations().at(kRevision), "2");
  EXPECT_EQ(ByImage("soscscs/myapp:v2").metadata().annotations().at(kRevision), "2");
  EXPECT_EQ(d.status().updated_replicas(), 3);
  EXPECT_THAT(Condition("myapp", "Progressing"), HasSubstr("NewReplicaSetAvailable"));
}

TEST_F(DeploymentTest, NewPodsThatNeverBecomeAvailableStopTheRolloutAtMaxUnavailable) {
  Create("web", 4);  // maxSurge 1, maxUnavailable 1: at least 3 available
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  CatchUp();
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  Edit("web", [](api::Deployment* d) {
    d->mutable_spec()->mutable_template_()->mutable_spec()->mutable_containers(0)->set_image(
        "broken:v2");
  });
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(Sync("web"), absl::OkStatus());
    CatchUp({"broken:v2"});
    EXPECT_GE(ByImage("soscscs/myapp:v1").status().available_replicas(), 3);
  }
  EXPECT_EQ(Sizes()["soscscs/myapp:v1"], 3);
  EXPECT_EQ(Sizes()["broken:v2"], 2);
}

TEST_F(DeploymentTest, ProgressDeadlineExceededWhenNothingMoves) {
  Create("web", 2);
  Edit("web", [](api::Deployment* d) { d->mutable_spec()->set_progress_deadline_seconds(30); });
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  CatchUp({"soscscs/myapp:v1"});
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_THAT(Condition("web", "Progressing"), HasSubstr("True ReplicaSetUpdated"));
  EXPECT_THAT(Condition("web", "Available"), HasSubstr("False MinimumReplicasUnavailable"));
  h_.clock.Advance(absl::Seconds(31));
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_THAT(Condition("web", "Progressing"),
              HasSubstr("False ProgressDeadlineExceeded: ReplicaSet \"web-"));
  EXPECT_THAT(Condition("web", "Progressing"), HasSubstr("has timed out progressing."));
}

TEST_F(DeploymentTest, RecreateRemovesEveryOldPodBeforeTheNewSetStarts) {
  Create("web", 2, "soscscs/myapp:v1", "Recreate");
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  CatchUp();
  // An old pod still running.
  api::Pod pod;
  pod.mutable_metadata()->set_name("web-old");
  (*pod.mutable_metadata()->mutable_labels())["app"] = "web";
  *pod.mutable_metadata()->add_owner_references() =
      ControllerRef(ByImage("soscscs/myapp:v1"), "apps/v1", "ReplicaSet");
  *pod.mutable_spec() = Template({}).spec();
  ASSERT_TRUE(h_.fake.Create<api::Pod>("pods", "default", pod).ok());
  Edit("web", [](api::Deployment* d) {
    d->mutable_spec()->mutable_template_()->mutable_spec()->mutable_containers(0)->set_image(
        "soscscs/myapp:v2");
  });
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(Sizes(), (std::map<std::string, int>{{"soscscs/myapp:v1", 0}}));
  CatchUp();  // the old set reports no pods, but one is still running
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(Sizes().size(), 1u) << "no new set while an old pod runs";
  apiserver::DeleteRequest del;
  del.set_resource("pods");
  del.set_namespace_("default");
  del.set_name("web-old");
  ASSERT_TRUE(h_.fake.Delete(del).ok());
  ASSERT_TRUE(h_.Settle());
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(Sizes(), (std::map<std::string, int>{{"soscscs/myapp:v1", 0},
                                                 {"soscscs/myapp:v2", 2}}));
}

TEST_F(DeploymentTest, ScalingResizesTheOnlyActiveSet) {
  Create("web", 3);
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  CatchUp();
  Edit("web", [](api::Deployment* d) { d->mutable_spec()->set_replicas(5); });
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  const api::ReplicaSet rs = ByImage("soscscs/myapp:v1");
  EXPECT_EQ(rs.spec().replicas(), 5);
  EXPECT_EQ(rs.metadata().annotations().at(kDesiredReplicas), "5");
  EXPECT_THAT(h_.Events(), Contains("ScalingReplicaSet: Scaled up replica set " +
                                    rs.metadata().name() + " from 3 to 5"));
  Edit("web", [](api::Deployment* d) { d->mutable_spec()->set_replicas(1); });
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(ByImage("soscscs/myapp:v1").spec().replicas(), 1);
  EXPECT_THAT(h_.Events(), Contains("ScalingReplicaSet: Scaled down replica set " +
                                    rs.metadata().name() + " from 5 to 1"));
}

TEST_F(DeploymentTest, ScalingMidRolloutIsSharedProportionally) {
  Create("web", 10);  // surge 3, unavailable 2
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  CatchUp();
  Edit("web", [](api::Deployment* d) {
    d->mutable_spec()->mutable_template_()->mutable_spec()->mutable_containers(0)->set_image(
        "soscscs/myapp:v2");
  });
  // One sync: the new set surges to 3 and the old one gives up 2 (10 available, 8 needed).
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  CatchUp({"soscscs/myapp:v2"});
  ASSERT_EQ(Sizes(), (std::map<std::string, int>{{"soscscs/myapp:v1", 8},
                                                 {"soscscs/myapp:v2", 3}}));
  Edit("web", [](api::Deployment* d) { d->mutable_spec()->set_replicas(20); });
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  // 20 + 5 surge = 25 allowed, 11 there: 14 to add. Shares by size against the 13 the sets
  // were sized for: ceil(8*25/13) = 16 (+8), ceil(3*25/13) = 6 (+3); the 3 left over go to
  // the biggest set.
  EXPECT_EQ(Sizes(), (std::map<std::string, int>{{"soscscs/myapp:v1", 19},
                                                 {"soscscs/myapp:v2", 6}}));
  EXPECT_EQ(ByImage("soscscs/myapp:v2").metadata().annotations().at(kMaxReplicas), "25");
}

TEST_F(DeploymentTest, APausedDeploymentScalesButDoesNotRollOut) {
  Create("web", 2);
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  CatchUp();
  Edit("web", [](api::Deployment* d) {
    d->mutable_spec()->set_paused(true);
    d->mutable_spec()->set_replicas(3);
    d->mutable_spec()->mutable_template_()->mutable_spec()->mutable_containers(0)->set_image(
        "soscscs/myapp:v2");
  });
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(Sizes(), (std::map<std::string, int>{{"soscscs/myapp:v1", 3}}));
  EXPECT_THAT(Condition("web", "Progressing"),
              HasSubstr("Unknown DeploymentPaused: Deployment is paused"));
  Edit("web", [](api::Deployment* d) { d->mutable_spec()->set_paused(false); });
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  EXPECT_EQ(Sizes()["soscscs/myapp:v2"], 1);
}

TEST_F(DeploymentTest, UndoReusesTheOldSetUnderANewRevisionAndHistoryIsLimited) {
  Create("web", 1);
  Edit("web", [](api::Deployment* d) { d->mutable_spec()->set_revision_history_limit(1); });
  auto roll_to = [&](const std::string& image) {
    Edit("web", [&](api::Deployment* d) {
      d->mutable_spec()->mutable_template_()->mutable_spec()->mutable_containers(0)->set_image(
          image);
    });
    for (int i = 0; i < 6; ++i) {
      ASSERT_EQ(Sync("web"), absl::OkStatus());
      CatchUp();
    }
  };
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Sync("web"), absl::OkStatus());
    CatchUp();
  }
  roll_to("soscscs/myapp:v2");
  EXPECT_EQ(Sizes(), (std::map<std::string, int>{{"soscscs/myapp:v1", 0},
                                                 {"soscscs/myapp:v2", 1}}));
  roll_to("soscscs/myapp:v1");  // an undo: the template of revision 1 again
  const api::ReplicaSet back = ByImage("soscscs/myapp:v1");
  EXPECT_EQ(back.metadata().annotations().at(kRevision), "3");
  EXPECT_EQ(back.metadata().annotations().at(kRevisionHistory), "1");
  EXPECT_EQ(back.spec().replicas(), 1);
  roll_to("nginx");
  // Revision 4 runs; one old set is kept (revision 3), revision 2's is gone.
  EXPECT_EQ(Sizes(), (std::map<std::string, int>{{"nginx", 1}, {"soscscs/myapp:v1", 0}}));
}

TEST_F(DeploymentTest, AdoptsAnOrphanReplicaSetThatMatches) {
  api::ReplicaSet orphan;
  orphan.mutable_metadata()->set_name("web-orphan");
  (*orphan.mutable_metadata()->mutable_labels())["app"] = "web";
  orphan.mutable_spec()->set_replicas(2);
  (*orphan.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = "web";
  *orphan.mutable_spec()->mutable_template_() = Template({{"app", "web"}});
  ASSERT_TRUE(h_.fake.Create<api::ReplicaSet>("replicasets", "default", orphan).ok());
  const api::Deployment d = Create("web", 2);
  ASSERT_EQ(Sync("web"), absl::OkStatus());
  const auto sets = h_.List<api::ReplicaSet>("replicasets");
  ASSERT_EQ(sets.size(), 1u) << "the orphan runs the template: no second set";
  ASSERT_NE(ControllerOf(sets[0].metadata()), nullptr);
  EXPECT_EQ(ControllerOf(sets[0].metadata())->uid(), d.metadata().uid());
}

}  // namespace
}  // namespace mkube::controller::deployment
