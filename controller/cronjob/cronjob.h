#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/cron.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "proto/api/apps.pb.h"
#include "proto/api/batch.pb.h"

namespace mkube::controller::cronjob {

// The most recent time a schedule named in (earliest, now], and whether more than 100 were
// missed in that span (Kubernetes then warns: its startingDeadlineSeconds or the clocks are
// off). nullopt: none came due.
struct Due {
  std::optional<absl::Time> time;
  bool too_many_missed = false;
};
Due MostRecentScheduleTime(const api::CronSchedule& schedule, const absl::TimeZone& zone,
                           absl::Time earliest, absl::Time now);

// The name of the Job a CronJob starts for `scheduled`: its name and the minutes since the
// epoch, so one scheduled time never makes two Jobs.
std::string JobName(const std::string& cronjob, absl::Time scheduled);

// Kubernetes' CronJob controller: at each time its schedule names (on the wall clock of
// spec.timeZone, else this process's zone), a CronJob makes a Job from its jobTemplate and
// keeps it in status.active until it finishes. A time missed (the controller down, a Job
// still running) is made up late unless startingDeadlineSeconds has passed (MissSchedule);
// only the most recent missed one runs. concurrencyPolicy Forbid skips a time while a Job is
// active, Replace deletes the active ones first, Allow runs them side by side. suspend stops
// new Jobs; finished Jobs past successfulJobsHistoryLimit / failedJobsHistoryLimit are deleted,
// oldest first.
class CronJobController final : public Controller {
 public:
  using CronJobPtr = std::shared_ptr<const api::CronJob>;
  using JobPtr = std::shared_ptr<const api::Job>;
  CronJobController(client::ApiClient* client, client::Informer<api::CronJob>* cronjobs,
                    client::Informer<api::Job>* jobs, client::EventRecorder* events,
                    client::Clock* clock);
  ~CronJobController() override { Stop(); }

  absl::Status Sync(const std::string& key) override;

 private:
  void OnJob(const JobPtr& job);
  // Folds the Jobs it owns into cj's status: finished ones leave `active`, gone ones too. May
  // replace cj with the apiserver's copy when the cache has not yet seen a Job it started.
  absl::Status Reconcile(api::CronJob* cj, const std::vector<JobPtr>& jobs);
  // Starts the Job due now, if one is; sets `next` to the schedule's next time.
  absl::Status Schedule(api::CronJob* cj, std::optional<absl::Time>* next);
  absl::Status StartJob(api::CronJob* cj, absl::Time scheduled, const absl::TimeZone& zone);
  absl::Status CleanUpFinished(api::CronJob* cj, const std::vector<JobPtr>& jobs);
  absl::Status DeleteJob(api::CronJob* cj, const std::string& name, const std::string& uid);
  absl::Status WriteStatus(const api::CronJob& cj, const api::CronJobStatus& before);

  client::ApiClient* const client_;
  client::Informer<api::CronJob>* const cronjobs_;
  client::Informer<api::Job>* const jobs_;
  client::EventRecorder* const events_;
};

}  // namespace mkube::controller::cronjob
