// CronJobs through the real binaries: bad schedules and zones refused with Kubernetes' words,
// `mkubectl create job --from=cronjob/NAME` (and --image -- COMMAND) at once, a Job at the next minute on the
// schedule's time zone, both to Complete and counted in the CronJob's status, and deleting
// the CronJob taking its Jobs and their pods along.
#include "proto/api/batch.pb.h"
#include "tests/integration/controller_fixture.h"

namespace mkube::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

constexpr char kHello[] = R"(apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
spec:
  schedule: "* * * * *"
  timeZone: Asia/Tokyo
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 2
  jobTemplate:
    metadata:
      labels:
        app: hello
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: hello
            image: busybox
            command: ['sh', '-c', 'date; echo Hello from the cluster']
)";

class CronJobTest : public ControllerTest {
 protected:
  static client::ApiClient* Client() { return cluster_->client(); }
  static std::string JobCondition(const std::string& name) {
    auto j = Client()->Get<api::Job>("jobs", "default", name);
    if (!j.ok()) return "";
    for (const auto& c : j->status().conditions()) {
      if (c.status() == "True") return c.type();
    }
    return "";
  }
  // The names of the Jobs in the namespace.
  static std::vector<std::string> Jobs() {
    apiserver::ListRequest req;
    req.set_resource("jobs");
    req.set_namespace_("default");
    std::vector<std::string> out;
    auto list = Client()->List(req);
    if (!list.ok()) return out;
    for (const auto& bytes : list->items()) {
      api::Job j;
      j.ParseFromString(bytes);
      out.push_back(j.metadata().name());
    }
    return out;
  }
  static std::string Show() {
    return Ctl({"get", "cronjobs"}).out + Ctl({"get", "jobs"}).out + Ctl({"get", "pods"}).out;
  }
};

TEST_F(CronJobTest, ACronJobRunsJobsOnItsScheduleAndByHand) {
  auto bad = Ctl({"apply", "-f", "-"}, std::string(kHello).replace(
                                           std::string(kHello).find("* * * * *"), 9, "61 * * * *"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("spec.schedule: Invalid value: \"61 * * * *\": end of range (61) "
                                 "above maximum (59): 61"));
  bad = Ctl({"apply", "-f", "-"}, std::string(kHello).replace(std::string(kHello).find("Asia/Tokyo"),
                                                              10, "Asia/Tokio"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("spec.timeZone: Invalid value: \"Asia/Tokio\": unknown time zone "
                                 "Asia/Tokio"));

  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kHello).exit_code, 0);
  EXPECT_THAT(Ctl({"get", "cronjobs"}).out,
              ContainsRegex("hello +\\* \\* \\* \\* \\* +Asia/Tokyo +False +0 +<none> +"));
  // By hand, now.
  auto made = Ctl({"create", "job", "manual", "--from=cronjob/hello"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(made.out, "job.batch/manual created\n");
  EXPECT_TRUE(Eventually([] { return JobCondition("manual") == "Complete"; },
                         std::chrono::seconds(30)))
      << Show();
  auto manual = Client()->Get<api::Job>("jobs", "default", "manual");
  ASSERT_TRUE(manual.ok());
  EXPECT_EQ(manual->metadata().annotations().at("cronjob.kubernetes.io/instantiate"), "manual");
  EXPECT_EQ(manual->metadata().labels().at("app"), "hello");
  // From an image, with a command after --.
  made = Ctl({"create", "job", "quick", "--image=busybox", "--", "sh", "-c", "echo quick"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_TRUE(Eventually([] { return JobCondition("quick") == "Complete"; },
                         std::chrono::seconds(30)))
      << Show();
  EXPECT_THAT(Ctl({"logs", "job/quick"}).out, HasSubstr("quick"));
  ASSERT_EQ(Ctl({"delete", "job", "quick"}).exit_code, 0);
  EXPECT_THAT(Ctl({"create", "job", "again", "--from=cronjob/nothing"}).err,
              HasSubstr("Error from server (NotFound): cronjobs.batch \"nothing\" not found"));

  // On the schedule: a Job within a minute, named by the minute it was due.
  std::string scheduled;
  EXPECT_TRUE(Eventually(
      [&] {
        for (const auto& name : Jobs()) {
          if (name.rfind("hello-", 0) == 0) scheduled = name;
        }
        return !scheduled.empty();
      },
      std::chrono::seconds(75)))
      << Show() << cluster_->Logs();
  ASSERT_THAT(scheduled, ContainsRegex("^hello-[0-9]+$"));
  auto job = Client()->Get<api::Job>("jobs", "default", scheduled);
  ASSERT_TRUE(job.ok());
  EXPECT_THAT(job->metadata().annotations().at("batch.kubernetes.io/cronjob-scheduled-timestamp"),
              ContainsRegex(":00\\+09:00$"));
  EXPECT_TRUE(Eventually([&] { return JobCondition(scheduled) == "Complete"; },
                         std::chrono::seconds(30)));
  EXPECT_TRUE(Eventually([] {
    auto cj = Client()->Get<api::CronJob>("cronjobs", "default", "hello");
    return cj.ok() && cj->status().active().empty() && !cj->status().last_successful_time().empty();
  }, std::chrono::seconds(10)));
  EXPECT_THAT(Ctl({"get", "events"}).out, HasSubstr("Created job " + scheduled));
  auto logs = Ctl({"logs", "-l", "job-name=" + scheduled});
  EXPECT_THAT(logs.out, HasSubstr("Hello from the cluster")) << logs.err << Show();

  // Deleting the CronJob takes its Jobs, scheduled and by hand, and their pods.
  ASSERT_EQ(Ctl({"delete", "cronjob", "hello"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return Jobs().empty() && Pods("job-name=manual").empty() &&
           Pods("job-name=" + scheduled).empty();
  }, std::chrono::seconds(30)))
      << Show();
}

}  // namespace
}  // namespace mkube::testing
