// The deployment controller's arithmetic: surge and unavailability, the new ReplicaSet's size,
// proportional shares, template hashes, and when a rollout is complete or has timed out.
#include "controller/deployment/util.h"

#include <gtest/gtest.h>

#include "api/object.h"
#include "controller/internal/int_or_percent.h"
#include "controller/internal/template_hash.h"
#include "tests/controller/harness.h"

namespace mkube::controller::deployment {
namespace {

api::IntOrString Int(int v) {
  api::IntOrString x;
  x.set_int_value(v);
  return x;
}
api::IntOrString Str(const std::string& v) {
  api::IntOrString x;
  x.set_string_value(v);
  return x;
}

api::Deployment Rolling(int replicas, api::IntOrString surge, api::IntOrString unavailable) {
  api::Deployment d;
  d.mutable_spec()->set_replicas(replicas);
  d.mutable_spec()->mutable_strategy()->set_type("RollingUpdate");
  *d.mutable_spec()->mutable_strategy()->mutable_rolling_update()->mutable_max_surge() = surge;
  *d.mutable_spec()->mutable_strategy()->mutable_rolling_update()->mutable_max_unavailable() =
      unavailable;
  return d;
}

RSPtr RS(int spec, int available = 0, const std::string& name = "rs") {
  api::ReplicaSet rs;
  rs.mutable_metadata()->set_name(name);
  rs.mutable_spec()->set_replicas(spec);
  rs.mutable_status()->set_replicas(spec);
  rs.mutable_status()->set_available_replicas(available);
  return std::make_shared<const api::ReplicaSet>(rs);
}

TEST(DeploymentUtilTest, PercentagesRoundUpForSurgeAndDownForUnavailability) {
  struct Case {
    api::IntOrString value;
    int total;
    bool up;
    int want;
  };
  for (const auto& c : std::vector<Case>{{Str("25%"), 10, true, 3},
                                         {Str("25%"), 10, false, 2},
                                         {Str("25%"), 3, true, 1},
                                         {Str("25%"), 3, false, 0},
                                         {Str("100%"), 7, false, 7},
                                         {Int(2), 10, true, 2},
                                         {Str("bad"), 10, true, 0}}) {
    EXPECT_EQ(Scaled(c.value, c.total, c.up), c.want)
        << c.value.ShortDebugString() << " of " << c.total;
  }
}

TEST(DeploymentUtilTest, FencepostsAsKubernetesResolvesThem) {
  struct Case {
    const char* name;
    api::Deployment d;
    int surge, unavailable;
  };
  api::Deployment recreate;
  recreate.mutable_spec()->set_replicas(5);
  recreate.mutable_spec()->mutable_strategy()->set_type("Recreate");
  for (const auto& c : std::vector<Case>{
           {"the seeds' 3 replicas with the 25% defaults", Rolling(3, Str("25%"), Str("25%")), 1, 0},
           {"10 replicas with the defaults", Rolling(10, Str("25%"), Str("25%")), 3, 2},
           {"both zero: one may be unavailable", Rolling(4, Int(0), Int(0)), 0, 1},
           {"never more unavailable than replicas", Rolling(2, Int(0), Int(5)), 0, 2},
           {"no replicas, nothing unavailable", Rolling(0, Int(1), Int(1)), 1, 0},
           {"Recreate neither surges nor counts", recreate, 0, 0}}) {
    EXPECT_EQ(MaxSurge(c.d), c.surge) << c.name;
    EXPECT_EQ(MaxUnavailable(c.d), c.unavailable) << c.name;
  }
}

TEST(DeploymentUtilTest, NewReplicaSetGrowsWithinTheSurge) {
  const api::Deployment d = Rolling(3, Str("25%"), Str("25%"));  // surge 1
  struct Case {
    const char* name;
    int old_spec, new_spec, want;
  };
  for (const auto& c : std::vector<Case>{{"first surge pod", 3, 0, 1},
                                         {"no room above 4", 3, 1, 1},
                                         {"an old one went: one more", 2, 1, 2},
                                         {"all old gone: the rest", 0, 1, 3},
                                         {"never above replicas", 0, 3, 3}}) {
    auto old_rs = RS(c.old_spec, c.old_spec, "old");
    auto new_rs = RS(c.new_spec, 0, "new");
    EXPECT_EQ(NewReplicaSetReplicas(d, {old_rs, new_rs}, *new_rs), c.want) << c.name;
  }
  api::Deployment recreate = d;
  recreate.mutable_spec()->mutable_strategy()->set_type("Recreate");
  EXPECT_EQ(NewReplicaSetReplicas(recreate, {RS(3)}, *RS(0)), 3);
}

TEST(DeploymentUtilTest, ProportionFollowsTheMaxReplicasAnnotation) {
  // 10 replicas (surge 3) split 8/5 mid-rollout, scaled to 20 (surge 5): 12 more to share.
  api::Deployment d = Rolling(20, Str("25%"), Str("25%"));
  auto annotate = [](RSPtr rs) {
    api::ReplicaSet copy = *rs;
    (*copy.mutable_metadata()->mutable_annotations())[kMaxReplicas] = "13";
    return copy;
  };
  const api::ReplicaSet old_rs = annotate(RS(8)), new_rs = annotate(RS(5));
  EXPECT_EQ(Proportion(old_rs, d, 12, 0), 8);   // ceil(8 * 25 / 13) = 16
  EXPECT_EQ(Proportion(new_rs, d, 12, 8), 4);   // 5 wanted, 4 left
  EXPECT_EQ(Proportion(new_rs, d, 12, 12), 0);  // nothing left
  api::Deployment zero = d;
  zero.mutable_spec()->set_replicas(0);
  EXPECT_EQ(Proportion(old_rs, zero, -13, 0), -8) << "scaling to zero removes all";
}

TEST(DeploymentUtilTest, TemplateHashIsStableAndChangesWithTheTemplateOrCollisions) {
  const api::PodTemplateSpec v1 = testing::Template({{"app", "myapp"}, {"tier", "web"}});
  const api::PodTemplateSpec v2 = testing::Template({{"app", "myapp"}, {"tier", "web"}},
                                                    "soscscs/myapp:v2");
  const std::string h = TemplateHash(v1, std::nullopt);
  EXPECT_EQ(h, TemplateHash(testing::Template({{"tier", "web"}, {"app", "myapp"}}), std::nullopt))
      << "map order must not matter";
  EXPECT_NE(h, TemplateHash(v2, std::nullopt));
  EXPECT_NE(h, TemplateHash(v1, 1));
  EXPECT_EQ(h.find_first_not_of("bcdfghjklmnpqrstvwxz2456789"), std::string::npos) << h;
  api::PodTemplateSpec labelled = v1;
  (*labelled.mutable_metadata()->mutable_labels())[kPodTemplateHash] = h;
  EXPECT_TRUE(EqualIgnoreHash(labelled, v1));
  EXPECT_FALSE(EqualIgnoreHash(labelled, v2));
}

TEST(DeploymentUtilTest, CompleteProgressingAndTimedOut) {
  api::Deployment d = Rolling(3, Str("25%"), Str("25%"));
  d.mutable_metadata()->set_generation(2);
  d.mutable_spec()->set_progress_deadline_seconds(600);
  api::DeploymentStatus s;
  s.set_observed_generation(2);
  s.set_replicas(3);
  s.set_updated_replicas(3);
  s.set_available_replicas(3);
  EXPECT_TRUE(Complete(d, s));
  s.set_observed_generation(1);
  EXPECT_FALSE(Complete(d, s)) << "the newest spec not yet observed";

  d.mutable_status()->set_replicas(4);
  d.mutable_status()->set_updated_replicas(1);
  api::DeploymentStatus next = d.status();
  EXPECT_FALSE(Progressing(d, next));
  next.set_updated_replicas(2);
  EXPECT_TRUE(Progressing(d, next));

  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  api::DeploymentStatus stuck;
  SetCondition(&stuck, NewCondition("Progressing", "True", kRSUpdated, "", t0));
  EXPECT_FALSE(TimedOut(d, stuck, t0 + absl::Seconds(600)));
  EXPECT_TRUE(TimedOut(d, stuck, t0 + absl::Seconds(601)));
  d.mutable_spec()->clear_progress_deadline_seconds();
  EXPECT_FALSE(TimedOut(d, stuck, t0 + absl::Hours(1))) << "no deadline";
}

TEST(DeploymentUtilTest, SetConditionKeepsTheTransitionTimeWhileTheStatusStays) {
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  api::DeploymentStatus s;
  SetCondition(&s, NewCondition("Progressing", "True", kNewRSCreated, "a", t0));
  SetCondition(&s, NewCondition("Progressing", "True", kNewRSCreated, "b", t0 + absl::Seconds(5)));
  EXPECT_EQ(FindCondition(s, "Progressing")->message(), "a") << "same reason: unchanged";
  SetCondition(&s, NewCondition("Progressing", "True", kRSUpdated, "c", t0 + absl::Seconds(9)));
  EXPECT_EQ(FindCondition(s, "Progressing")->message(), "c");
  EXPECT_EQ(FindCondition(s, "Progressing")->last_transition_time(), api::Rfc3339(t0));
  EXPECT_EQ(FindCondition(s, "Progressing")->last_update_time(),
            api::Rfc3339(t0 + absl::Seconds(9)));
  EXPECT_EQ(s.conditions_size(), 1);
}

}  // namespace
}  // namespace mkube::controller::deployment
