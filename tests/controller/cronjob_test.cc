// The CronJob controller against the fake clientset and clock: a Job at each scheduled time
// and none before, the three concurrency policies, missed times made up once (or skipped past
// startingDeadlineSeconds), suspend, time zones, history limits, Jobs gone or unexpected, and
// a Job already made by a sync whose status write was lost.
#include "controller/cronjob/cronjob.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/controller/harness.h"

namespace mkube::controller::cronjob {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::Harness;
using testing::Template;

// The fake clock starts at 2023-11-14 22:13:20 UTC.
absl::Time At(int hour, int minute, int second = 0) {
  return absl::FromCivil(absl::CivilSecond(2023, 11, 14, hour, minute, second),
                         absl::UTCTimeZone());
}

TEST(MostRecentScheduleTimeTest, TheLatestDueTimeAndWhetherTooManyWereMissed) {
  auto every_minute = api::CronSchedule::Parse("* * * * *");
  ASSERT_TRUE(every_minute.ok());
  const absl::TimeZone utc = absl::UTCTimeZone();
  Due due = MostRecentScheduleTime(*every_minute, utc, At(10, 0, 30), At(10, 0, 59));
  EXPECT_FALSE(due.time.has_value()) << "none came due yet";
  due = MostRecentScheduleTime(*every_minute, utc, At(10, 0, 30), At(10, 3, 10));
  EXPECT_EQ(due.time, At(10, 3));
  EXPECT_FALSE(due.too_many_missed);
  due = MostRecentScheduleTime(*every_minute, utc, At(10, 0), At(13, 0, 5));
  EXPECT_EQ(due.time, At(13, 0));
  EXPECT_TRUE(due.too_many_missed) << "180 missed";
  // Sparse after many: the search back from now finds the last one of the burst.
  auto morning = api::CronSchedule::Parse("* 8-9 * * *");
  ASSERT_TRUE(morning.ok());
  due = MostRecentScheduleTime(*morning, utc, At(7, 0), At(20, 0));
  EXPECT_EQ(due.time, At(9, 59));
  EXPECT_TRUE(due.too_many_missed);
}

TEST(JobNameTest, MinutesSinceTheEpoch) {
  EXPECT_EQ(JobName("hello", At(22, 15)), "hello-28333335");
}

class CronJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ = std::make_unique<CronJobController>(&h_.fake, &cronjobs_, &jobs_, &h_.events,
                                                      &h_.clock);
    cronjobs_.Start();
    jobs_.Start();
    h_.Start();
  }
  void TearDown() override {
    jobs_.Stop();
    cronjobs_.Stop();
    h_.StopInformers();
    controller_.reset();
  }
  template <typename T>
  bool Caught(client::Informer<T>& informer, const std::string& resource) {
    std::map<std::string, std::string> want, have;
    for (const auto& o : h_.List<T>(resource)) want[client::KeyOf(o)] = o.metadata().resource_version();
    for (const auto& o : informer.List()) have[client::KeyOf(*o)] = o->metadata().resource_version();
    return want == have;
  }
  // The harness's caches and this fixture's two; callers assert it.
  [[nodiscard]] ::testing::AssertionResult Settle() {
    if (auto settled = h_.Settle(); !settled) return settled;
    if (mkube::testing::Eventually(
            [&] { return Caught(cronjobs_, "cronjobs") && Caught(jobs_, "jobs"); })) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "the cronjob and job caches did not catch up in 10 s";
  }
  void Create(const std::string& schedule, void (*edit)(api::CronJobSpec*) = nullptr) {
    api::CronJob cj;
    cj.mutable_metadata()->set_name("hello");
    cj.mutable_spec()->set_schedule(schedule);
    auto* tmpl = cj.mutable_spec()->mutable_job_template();
    (*tmpl->mutable_metadata()->mutable_labels())["app"] = "hello";
    (*tmpl->mutable_metadata()->mutable_annotations())["note"] = "from the template";
    *tmpl->mutable_spec()->mutable_template_() = Template({}, "busybox");
    tmpl->mutable_spec()->mutable_template_()->mutable_spec()->set_restart_policy("OnFailure");
    if (edit) edit(cj.mutable_spec());
    auto made = h_.fake.Create<api::CronJob>("cronjobs", "default", cj);
    ASSERT_TRUE(made.ok()) << made.status();
    ASSERT_TRUE(Settle());
  }
  absl::Status Sync() {
    absl::Status st = controller_->Sync("default/hello");
    EXPECT_TRUE(Settle());
    return st;
  }
  api::CronJob Get() { return h_.Get<api::CronJob>("cronjobs", "hello"); }
  std::vector<std::string> Jobs() {
    std::vector<std::string> out;
    for (const auto& j : h_.List<api::Job>("jobs")) {
      if (j.metadata().deletion_timestamp().empty()) out.push_back(j.metadata().name());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::string> Active() {
    std::vector<std::string> out;
    const api::CronJob cj = Get();
    for (const auto& ref : cj.status().active()) out.push_back(ref.name());
    return out;
  }
  void Finish(const std::string& job, const std::string& type) {
    auto j = h_.Get<api::Job>("jobs", job);
    auto* c = j.mutable_status()->add_conditions();
    c->set_type(type);
    c->set_status("True");
    j.mutable_status()->set_start_time(api::Rfc3339(h_.clock.Now()));
    if (type == "Complete") j.mutable_status()->set_completion_time(api::Rfc3339(h_.clock.Now()));
    ASSERT_TRUE(h_.fake.Update<api::Job>("jobs", "default", j, "status").ok());
    ASSERT_TRUE(Settle());
  }
  std::string Name(absl::Time t) { return JobName("hello", t); }

  Harness h_;
  client::Informer<api::CronJob> cronjobs_{&h_.fake, "cronjobs"};
  client::Informer<api::Job> jobs_{&h_.fake, "jobs"};
  std::unique_ptr<CronJobController> controller_;
};

TEST_F(CronJobTest, AJobAtEachScheduledTimeAndNoneBefore) {
  Create("*/5 * * * *");
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), IsEmpty()) << "22:15 has not come yet";
  h_.clock.Set(At(22, 15, 1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  ASSERT_THAT(Jobs(), ElementsAre(Name(At(22, 15))));
  const auto job = h_.Get<api::Job>("jobs", Name(At(22, 15)));
  EXPECT_EQ(job.metadata().labels().at("app"), "hello");
  EXPECT_EQ(job.metadata().annotations().at("note"), "from the template");
  EXPECT_EQ(job.metadata().annotations().at("batch.kubernetes.io/cronjob-scheduled-timestamp"),
            "2023-11-14T22:15:00Z");
  ASSERT_EQ(job.metadata().owner_references_size(), 1);
  EXPECT_EQ(job.metadata().owner_references(0).kind(), "CronJob");
  EXPECT_TRUE(job.metadata().owner_references(0).controller());
  EXPECT_EQ(job.spec().template_().spec().restart_policy(), "OnFailure");
  EXPECT_THAT(Active(), ElementsAre(Name(At(22, 15))));
  EXPECT_EQ(Get().status().last_schedule_time(), "2023-11-14T22:15:00Z");
  EXPECT_THAT(h_.Events(), Contains("SuccessfulCreate: Created job " + Name(At(22, 15))));

  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_EQ(Jobs().size(), 1u) << "one Job per scheduled time";

  Finish(Name(At(22, 15)), "Complete");
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Active(), IsEmpty());
  EXPECT_EQ(Get().status().last_successful_time(), api::Rfc3339(At(22, 15, 1)));
  EXPECT_THAT(h_.Events(), Contains("SawCompletedJob: Saw completed job: " + Name(At(22, 15)) +
                                    ", condition: Complete"));
}

TEST_F(CronJobTest, AllowRunsJobsSideBySide) {
  Create("* * * * *");
  h_.clock.Set(At(22, 14, 1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  h_.clock.Set(At(22, 15, 1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Active(), ElementsAre(Name(At(22, 14)), Name(At(22, 15))));
}

TEST_F(CronJobTest, ForbidSkipsATimeWhileAJobRunsThenMakesItUp) {
  Create("* * * * *", [](api::CronJobSpec* s) { s->set_concurrency_policy("Forbid"); });
  h_.clock.Set(At(22, 14, 1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  h_.clock.Set(At(22, 15, 1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), ElementsAre(Name(At(22, 14))));
  EXPECT_THAT(h_.Events(), Contains("JobAlreadyActive: Not starting job because prior execution "
                                    "is running and concurrency policy is Forbid"));
  // Once it finishes, the time it held back runs late.
  Finish(Name(At(22, 14)), "Complete");
  h_.clock.Set(At(22, 15, 30));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Active(), ElementsAre(Name(At(22, 15))));
}

TEST_F(CronJobTest, ReplaceDeletesTheRunningJobFirst) {
  Create("* * * * *", [](api::CronJobSpec* s) { s->set_concurrency_policy("Replace"); });
  h_.clock.Set(At(22, 14, 1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  h_.clock.Set(At(22, 15, 1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), ElementsAre(Name(At(22, 15))));
  EXPECT_THAT(Active(), ElementsAre(Name(At(22, 15))));
  EXPECT_THAT(h_.Events(), Contains("SuccessfulDelete: Deleted job " + Name(At(22, 14))));
}

TEST_F(CronJobTest, MissedTimesRunOnceLateUnlessPastTheStartingDeadline) {
  Create("*/5 * * * *");
  h_.clock.Set(At(22, 47));  // 22:15 to 22:45 were missed
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), ElementsAre(Name(At(22, 45)))) << "only the most recent";
}

TEST_F(CronJobTest, PastTheStartingDeadlineAMissedTimeIsSkipped) {
  Create("*/5 * * * *", [](api::CronJobSpec* s) { s->set_starting_deadline_seconds(60); });
  h_.clock.Set(At(22, 47));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), IsEmpty()) << "22:45 is more than 60 s ago";
  h_.clock.Set(At(22, 50, 59));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), ElementsAre(Name(At(22, 50))));
}

TEST_F(CronJobTest, TooManyMissedTimesAreReportedAndTheLatestRuns) {
  Create("* * * * *");
  h_.clock.Set(At(23, 59, 30));  // 105 minutes missed
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), ElementsAre(Name(At(23, 59))));
  EXPECT_THAT(h_.Events(),
              Contains("TooManyMissedTimes: too many missed start times. Set or decrease "
                       ".spec.startingDeadlineSeconds or check clock skew"));
}

TEST_F(CronJobTest, ASuspendedCronJobStartsNothing) {
  Create("* * * * *", [](api::CronJobSpec* s) { s->set_suspend(true); });
  h_.clock.Set(At(22, 20));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), IsEmpty());
}

TEST_F(CronJobTest, TheScheduleIsReadInItsTimeZone) {
  // 22:30 in Tokyo (UTC+9) is 13:30 UTC: the next one is the next day's.
  Create("30 22 * * *", [](api::CronJobSpec* s) { s->set_time_zone("Asia/Tokyo"); });
  const absl::Time due = absl::FromCivil(absl::CivilMinute(2023, 11, 15, 13, 30),
                                         absl::UTCTimeZone());
  h_.clock.Set(due - absl::Seconds(1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), IsEmpty());
  h_.clock.Set(due + absl::Seconds(1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  ASSERT_THAT(Jobs(), ElementsAre(Name(due)));
  EXPECT_EQ(h_.Get<api::Job>("jobs", Name(due))
                .metadata()
                .annotations()
                .at("batch.kubernetes.io/cronjob-scheduled-timestamp"),
            "2023-11-15T22:30:00+09:00");
}

TEST_F(CronJobTest, FinishedJobsPastTheHistoryLimitsGoOldestFirst) {
  Create("* * * * *", [](api::CronJobSpec* s) {
    s->set_successful_jobs_history_limit(1);
    s->set_failed_jobs_history_limit(0);
  });
  for (int minute : {14, 15, 16, 17}) {
    h_.clock.Set(At(22, minute, 1));
    ASSERT_EQ(Sync(), absl::OkStatus());
    Finish(Name(At(22, minute)), minute == 17 ? "Failed" : "Complete");
  }
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), ElementsAre(Name(At(22, 16))));
  EXPECT_THAT(h_.Events(), Contains("SuccessfulDelete: Deleted job " + Name(At(22, 14))));
  EXPECT_THAT(h_.Events(), Contains("SuccessfulDelete: Deleted job " + Name(At(22, 17))));
}

TEST_F(CronJobTest, AJobDeletedByHandLeavesTheActiveList) {
  Create("* * * * *");
  h_.clock.Set(At(22, 14, 1));
  ASSERT_EQ(Sync(), absl::OkStatus());
  apiserver::DeleteRequest req;
  req.set_resource("jobs");
  req.set_namespace_("default");
  req.set_name(Name(At(22, 14)));
  req.set_propagation_policy("Background");
  ASSERT_TRUE(h_.fake.Delete(req).ok());
  ASSERT_TRUE(Settle());
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Active(), IsEmpty());
  EXPECT_THAT(h_.Events(), Contains("MissingJob: Active job went missing: " + Name(At(22, 14))));
}

TEST_F(CronJobTest, AJobMadeByHandFromItIsReportedNotTracked) {
  Create("*/30 * * * *");
  api::Job manual;
  manual.mutable_metadata()->set_name("manual");
  auto cj = Get();
  auto* ref = manual.mutable_metadata()->add_owner_references();
  ref->set_kind("CronJob");
  ref->set_name("hello");
  ref->set_uid(cj.metadata().uid());
  ref->set_controller(true);
  *manual.mutable_spec() = cj.spec().job_template().spec();
  ASSERT_TRUE(h_.fake.Create<api::Job>("jobs", "default", manual).ok());
  ASSERT_TRUE(Settle());
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Active(), IsEmpty());
  EXPECT_THAT(h_.Events(),
              Contains("UnexpectedJob: Saw a job that the controller did not create or forgot: "
                       "manual"));
}

TEST_F(CronJobTest, AJobMadeBeforeALostStatusWriteIsTakenBackNotMadeTwice) {
  Create("*/5 * * * *");
  // A Job for 22:15 exists (an earlier sync made it and died before writing the status).
  auto cj = Get();
  api::Job job;
  job.mutable_metadata()->set_name(Name(At(22, 15)));
  auto* ref = job.mutable_metadata()->add_owner_references();
  ref->set_kind("CronJob");
  ref->set_name("hello");
  ref->set_uid(cj.metadata().uid());
  ref->set_controller(true);
  *job.mutable_spec() = cj.spec().job_template().spec();
  ASSERT_TRUE(h_.fake.Create<api::Job>("jobs", "default", job).ok());
  ASSERT_TRUE(Settle());
  h_.clock.Set(At(22, 16));
  ASSERT_EQ(Sync(), absl::OkStatus());
  EXPECT_THAT(Jobs(), ElementsAre(Name(At(22, 15))));
  EXPECT_THAT(Active(), ElementsAre(Name(At(22, 15))));
  EXPECT_EQ(Get().status().last_schedule_time(), "2023-11-14T22:15:00Z");
  EXPECT_THAT(h_.Events(), Not(Contains("SuccessfulCreate: Created job " + Name(At(22, 15)))));
}

}  // namespace
}  // namespace mkube::controller::cronjob
