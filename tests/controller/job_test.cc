// The Job controller against the fake clientset and clock: completions with parallelism,
// BackoffLimitExceeded with the back-off between failures, DeadlineExceeded, a work queue
// without completions, and ttlSecondsAfterFinished.
#include "controller/job/job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/controller/harness.h"

namespace mkube::controller::job {
namespace {

using ::testing::Contains;
using testing::Harness;
using testing::Template;

class JobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ =
        std::make_unique<JobController>(&h_.fake, &jobs_, &h_.pods, &h_.events, &h_.clock);
    jobs_.Start();
    h_.Start();
  }
  void TearDown() override {
    jobs_.Stop();
    h_.StopInformers();
    controller_.reset();
  }
  // The harness's caches and this fixture's; callers assert it.
  [[nodiscard]] ::testing::AssertionResult Settle() {
    if (auto settled = h_.Settle(); !settled) return settled;
    const bool caught = mkube::testing::Eventually([&] {
      for (const auto& j : h_.List<api::Job>("jobs")) {
        auto cached = jobs_.Get(client::KeyOf(j));
        if (!cached || cached->metadata().resource_version() != j.metadata().resource_version()) {
          return false;
        }
      }
      return true;
    });
    if (caught) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "the job cache did not catch up in 10 s";
  }
  void Create(api::Job job) {
    job.mutable_metadata()->set_name("pi");
    *job.mutable_spec()->mutable_template_() = Template({}, "busybox");
    job.mutable_spec()->mutable_template_()->mutable_spec()->set_restart_policy("Never");
    ASSERT_TRUE(h_.fake.Create<api::Job>("jobs", "default", job).ok());
    ASSERT_TRUE(Settle());
  }
  absl::Status Sync() {
    absl::Status st = controller_->Sync("default/pi");
    EXPECT_TRUE(Settle());
    return st;
  }
  std::vector<api::Pod> Running() {
    std::vector<api::Pod> out;
    for (const auto& p : h_.Pods()) {
      if (p.metadata().deletion_timestamp().empty() && p.status().phase() != "Succeeded" &&
          p.status().phase() != "Failed") {
        out.push_back(p);
      }
    }
    return out;
  }
  void End(const api::Pod& pod, const std::string& phase) {
    api::Pod p = pod;
    p.mutable_status()->set_phase(phase);
    ASSERT_TRUE(h_.fake.Update<api::Pod>("pods", "default", p, "status").ok());
    ASSERT_TRUE(Settle());
  }
  std::string Condition() {
    const auto job = h_.Get<api::Job>("jobs", "pi");
    for (const auto& c : job.status().conditions()) {
      if (c.status() == "True") return c.type() + " " + c.reason();
    }
    return "";
  }

  Harness h_;
  client::Informer<api::Job> jobs_{&h_.fake, "jobs"};
  std::unique_ptr<JobController> controller_;
};

TEST_F(JobTest, CompletionsWithParallelismThenComplete) {
  api::Job job;
  job.mutable_spec()->set_completions(3);
  job.mutable_spec()->set_parallelism(2);
  Create(job);
  ASSERT_EQ(Sync(), absl::OkStatus());
  ASSERT_EQ(Running().size(), 2u);
  const api::Pod first = Running()[0];
  EXPECT_EQ(first.metadata().labels().at("job-name"), "pi");
  EXPECT_EQ(first.metadata().labels().at("batch.kubernetes.io/controller-uid"),
            h_.Get<api::Job>("jobs", "pi").metadata().uid());
  End(first, "Succeeded");
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_EQ(Running().size(), 2u) << "two more to go, two at a time";
  for (const auto& p : Running()) End(p, "Succeeded");
  ASSERT_EQ(Sync(), absl::OkStatus());
  const auto done = h_.Get<api::Job>("jobs", "pi");
  EXPECT_EQ(Condition(), "Complete ");
  EXPECT_EQ(done.status().succeeded(), 3);
  EXPECT_EQ(done.status().active(), 0);
  EXPECT_FALSE(done.status().completion_time().empty());
  EXPECT_THAT(h_.Events(), Contains("Completed: Job completed"));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_EQ(h_.Pods().size(), 3u) << "nothing more after it completed";
}

TEST_F(JobTest, FailuresPastTheBackoffLimitFailTheJob) {
  api::Job job;
  job.mutable_spec()->set_backoff_limit(1);
  Create(job);
  ASSERT_EQ(Sync(), absl::OkStatus());
  End(Running().at(0), "Failed");
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_EQ(Condition(), "") << "one failure is within the limit";
  EXPECT_TRUE(Running().empty()) << "the replacement waits 10 s after the failure";
  h_.clock.Advance(absl::Seconds(10));
  ASSERT_EQ(Sync(), absl::OkStatus());
  ASSERT_EQ(Running().size(), 1u);
  End(Running().at(0), "Failed");
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_EQ(Condition(), "Failed BackoffLimitExceeded");
  EXPECT_EQ(h_.Get<api::Job>("jobs", "pi").status().failed(), 2);
  EXPECT_THAT(h_.Events(),
              Contains("BackoffLimitExceeded: Job has reached the specified backoff limit"));
}

TEST(FailureBackoffTest, TenSecondsDoublingPerFailureSinceTheLastSuccessAtMostTenMinutes) {
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  auto pod = [&](const std::string& phase, int seconds) {
    auto p = std::make_shared<api::Pod>();
    p->mutable_status()->set_phase(phase);
    p->mutable_status()->add_container_statuses()->mutable_state()->mutable_terminated()
        ->set_finished_at(api::Rfc3339(t0 + absl::Seconds(seconds)));
    return PodPtr(p);
  };
  EXPECT_EQ(FailureBackoff({}, t0), absl::ZeroDuration());
  EXPECT_EQ(FailureBackoff({pod("Failed", 0)}, t0 + absl::Seconds(4)), absl::Seconds(6));
  EXPECT_EQ(FailureBackoff({pod("Failed", 0), pod("Failed", 5)}, t0 + absl::Seconds(5)),
            absl::Seconds(20));
  EXPECT_EQ(FailureBackoff({pod("Failed", 0), pod("Succeeded", 3), pod("Failed", 5)},
                           t0 + absl::Seconds(5)),
            absl::Seconds(10))
      << "only failures after the last success count";
  std::vector<PodPtr> many;
  for (int i = 0; i < 12; ++i) many.push_back(pod("Failed", i));
  EXPECT_EQ(FailureBackoff(many, t0 + absl::Seconds(11)), absl::Minutes(10));
  EXPECT_EQ(FailureBackoff({pod("Failed", 0)}, t0 + absl::Seconds(30)), absl::ZeroDuration());
}

TEST_F(JobTest, ADeadlinePassedFailsTheJobAndStopsItsPods) {
  api::Job job;
  job.mutable_spec()->set_active_deadline_seconds(10);
  Create(job);
  ASSERT_EQ(Sync(), absl::OkStatus());
  ASSERT_EQ(Running().size(), 1u);
  h_.clock.Advance(absl::Seconds(10));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_EQ(Condition(), "Failed DeadlineExceeded");
  EXPECT_TRUE(Running().empty());
}

TEST_F(JobTest, AFinishedJobGoesAfterItsTtl) {
  api::Job job;
  job.mutable_spec()->set_ttl_seconds_after_finished(5);
  Create(job);
  ASSERT_EQ(Sync(), absl::OkStatus());
  End(Running().at(0), "Succeeded");
  ASSERT_EQ(Sync(), absl::OkStatus());
  ASSERT_EQ(Condition(), "Complete ");
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_EQ(h_.List<api::Job>("jobs").size(), 1u);
  h_.clock.Advance(absl::Seconds(5));
  ASSERT_EQ(Sync(), absl::OkStatus());
  auto gone = h_.fake.Get<api::Job>("jobs", "default", "pi");
  EXPECT_TRUE(!gone.ok() || !gone->metadata().deletion_timestamp().empty());
}

}  // namespace
}  // namespace mkube::controller::job
