#include "controller/cronjob/cronjob.h"

#include <algorithm>
#include <set>

#include "api/object.h"
#include "base/status.h"
#include "controller/internal/indexes.h"
#include "controller/internal/job_status.h"
#include "controller/internal/owner.h"
#include "fmt/format.h"

namespace mkube::controller::cronjob {
namespace {

// "Complete" or "Failed" for a finished Job, else empty.
std::string Finished(const api::Job& job) {
  const api::Condition* c = FinishedCondition(job.status());
  return c ? c->type() : "";
}

bool InActive(const api::CronJobStatus& status, const std::string& uid) {
  for (const auto& ref : status.active()) {
    if (ref.uid() == uid) return true;
  }
  return false;
}

void RemoveActive(api::CronJobStatus* status, const std::string& uid) {
  auto* active = status->mutable_active();
  for (int i = active->size() - 1; i >= 0; --i) {
    if (active->Get(i).uid() == uid) active->DeleteSubrange(i, 1);
  }
}

// Go's RFC1123Z, in UTC, as Kubernetes' MissSchedule event words the time.
std::string Rfc1123Z(absl::Time t) {
  return absl::FormatTime("%a, %d %b %Y %H:%M:%S +0000", t, absl::UTCTimeZone());
}

}  // namespace

Due MostRecentScheduleTime(const api::CronSchedule& schedule, const absl::TimeZone& zone,
                           absl::Time earliest, absl::Time now) {
  Due due;
  int missed = 0;
  for (absl::Time t = schedule.Next(earliest, zone); t <= now; t = schedule.Next(t, zone)) {
    due.time = t;
    if (++missed > 100) {
      due.too_many_missed = true;
      break;
    }
  }
  if (!due.too_many_missed) return due;
  // Too many to walk: look back from now over a window that doubles until it holds one.
  for (absl::Duration window = absl::Minutes(1);; window *= 2) {
    const absl::Time from = std::max(now - window, *due.time);
    absl::Time t = schedule.Next(from, zone);
    if (t > now) {
      if (from == *due.time) return due;
      continue;
    }
    for (; t <= now; t = schedule.Next(t, zone)) due.time = t;
    return due;
  }
}

std::string JobName(const std::string& cronjob, absl::Time scheduled) {
  return fmt::format("{}-{}", cronjob, absl::ToUnixSeconds(scheduled) / 60);
}

CronJobController::CronJobController(client::ApiClient* client,
                                     client::Informer<api::CronJob>* cronjobs,
                                     client::Informer<api::Job>* jobs,
                                     client::EventRecorder* events, client::Clock* clock)
    : Controller("cronjob-controller", clock),
      client_(client),
      cronjobs_(cronjobs),
      jobs_(jobs),
      events_(events) {
  IndexByController(jobs_);
  cronjobs_->AddHandlers({
      .on_add = [this](const CronJobPtr& cj) { Enqueue(*cj); },
      .on_update = [this](const CronJobPtr&, const CronJobPtr& cj) { Enqueue(*cj); },
  });
  jobs_->AddHandlers({
      .on_add = [this](const JobPtr& j) { OnJob(j); },
      .on_update = [this](const JobPtr&, const JobPtr& j) { OnJob(j); },
      .on_delete = [this](const JobPtr& j) { OnJob(j); },
  });
}

void CronJobController::OnJob(const JobPtr& job) {
  if (CronJobPtr cj = ResolveControllerRef(*cronjobs_, job->metadata().namespace_(),
                                           ControllerOf(job->metadata()), "CronJob")) {
    Enqueue(*cj);
  }
}

absl::Status CronJobController::Sync(const std::string& key) {
  CronJobPtr cached = cronjobs_->Get(key);
  if (!cached) return absl::OkStatus();
  api::CronJob cj = *cached;
  const std::vector<JobPtr> jobs = jobs_->ByIndex(kByController, cj.metadata().uid());
  MKUBE_RETURN_IF_ERROR(Reconcile(&cj, jobs));
  std::optional<absl::Time> next;
  absl::Status error = Schedule(&cj, &next);
  if (error.ok()) error = CleanUpFinished(&cj, jobs);
  if (auto st = WriteStatus(cj, cached->status()); !st.ok() && error.ok()) error = st;
  if (next) EnqueueAfter(cj, *next - clock_->Now() + absl::Milliseconds(100));
  return error;
}

absl::Status CronJobController::Reconcile(api::CronJob* cj, const std::vector<JobPtr>& jobs) {
  // Our cache of the CronJob may be older than a Job it started: then the apiserver's copy,
  // asked for once, is the one to fold the Jobs into.
  const bool unknown = std::any_of(jobs.begin(), jobs.end(), [&](const JobPtr& j) {
    return Finished(*j).empty() && !InActive(cj->status(), j->metadata().uid());
  });
  if (unknown) {
    MKUBE_ASSIGN_OR_RETURN(
        auto fresh,
        client_->Get<api::CronJob>("cronjobs", cj->metadata().namespace_(), cj->metadata().name()));
    if (fresh.metadata().uid() == cj->metadata().uid()) *cj = std::move(fresh);
  }
  api::CronJobStatus* status = cj->mutable_status();
  std::set<std::string> children;
  for (const auto& j : jobs) {
    const std::string& uid = j->metadata().uid();
    children.insert(uid);
    const std::string finished = Finished(*j);
    const bool active = InActive(*status, uid);
    if (!active && finished.empty()) {
      events_->Record(*cj, "Warning", "UnexpectedJob",
                      "Saw a job that the controller did not create or forgot: " +
                          j->metadata().name());
    } else if (active && !finished.empty()) {
      RemoveActive(status, uid);
      events_->Record(*cj, "Normal", "SawCompletedJob",
                      fmt::format("Saw completed job: {}, condition: {}", j->metadata().name(),
                                  finished));
    }
    const std::string& completed = j->status().completion_time();
    if (finished == "Complete" && !completed.empty()) {
      auto at = api::ParseRfc3339(completed);
      auto last = api::ParseRfc3339(status->last_successful_time());
      if (at && (!last || *last < *at)) status->set_last_successful_time(completed);
    }
  }
  // References to Jobs gone (deleted by hand, say) leave the list.
  const auto refs = status->active();
  for (const auto& ref : refs) {
    if (children.count(ref.uid())) continue;
    auto job = client_->Get<api::Job>("jobs", cj->metadata().namespace_(), ref.name());
    if (!job.ok() && job.status().code() != absl::StatusCode::kNotFound) return job.status();
    if (job.ok() && job->metadata().uid() == ref.uid()) continue;  // not cached yet
    events_->Record(*cj, "Normal", "MissingJob", "Active job went missing: " + ref.name());
    RemoveActive(status, ref.uid());
  }
  return absl::OkStatus();
}

absl::Status CronJobController::Schedule(api::CronJob* cj, std::optional<absl::Time>* next) {
  const auto& spec = cj->spec();
  if (!cj->metadata().deletion_timestamp().empty()) return absl::OkStatus();
  absl::TimeZone zone = absl::LocalTimeZone();
  if (spec.has_time_zone()) {
    auto z = api::LoadCronTimeZone(spec.time_zone());
    if (!z.ok()) {
      events_->Record(*cj, "Warning", "UnknownTimeZone",
                      fmt::format("invalid timeZone: \"{}\": {}", spec.time_zone(),
                                  std::string(z.status().message())));
      return absl::OkStatus();
    }
    zone = *z;
  }
  if (spec.suspend()) return absl::OkStatus();
  auto schedule = api::CronSchedule::Parse(spec.schedule());
  if (!schedule.ok()) {
    events_->Record(*cj, "Warning", "UnparseableSchedule",
                    fmt::format("unparseable schedule: \"{}\" : {}", spec.schedule(),
                                std::string(schedule.status().message())));
    return absl::OkStatus();
  }
  const absl::Time now = clock_->Now();
  absl::Time earliest = now;
  if (auto last = api::ParseRfc3339(cj->status().last_schedule_time())) {
    earliest = *last;
  } else if (auto created = api::ParseRfc3339(cj->metadata().creation_timestamp())) {
    earliest = *created;
  }
  const bool deadline = spec.has_starting_deadline_seconds();
  const absl::Duration late = absl::Seconds(spec.starting_deadline_seconds());
  if (deadline) earliest = std::max(earliest, now - late);
  const Due due = MostRecentScheduleTime(*schedule, zone, earliest, now);
  if (due.too_many_missed) {
    events_->Record(*cj, "Warning", "TooManyMissedTimes",
                    "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                    "or check clock skew");
  }
  if (absl::Time n = schedule->Next(now, zone); n != absl::InfiniteFuture()) *next = n;
  if (!due.time) return absl::OkStatus();
  const absl::Time scheduled = *due.time;
  if (deadline && scheduled + late < now) {
    events_->Record(*cj, "Warning", "MissSchedule",
                    "Missed scheduled time to start a job: " + Rfc1123Z(scheduled));
    return absl::OkStatus();
  }
  const std::string name = JobName(cj->metadata().name(), scheduled);
  for (const auto& ref : cj->status().active()) {
    if (ref.name() == name) return absl::OkStatus();  // started already
  }
  if (spec.concurrency_policy() == "Forbid" && cj->status().active_size() > 0) {
    events_->Record(*cj, "Normal", "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency "
                    "policy is Forbid");
    return absl::OkStatus();
  }
  if (spec.concurrency_policy() == "Replace") {
    const auto refs = cj->status().active();
    for (const auto& ref : refs) {
      MKUBE_RETURN_IF_ERROR(DeleteJob(cj, ref.name(), ref.uid()));
    }
  }
  return StartJob(cj, scheduled, zone);
}

absl::Status CronJobController::StartJob(api::CronJob* cj, absl::Time scheduled,
                                         const absl::TimeZone& zone) {
  const auto& tmpl = cj->spec().job_template();
  const std::string& ns = cj->metadata().namespace_();
  api::Job job;
  job.set_api_version("batch/v1");
  job.set_kind("Job");
  auto* meta = job.mutable_metadata();
  meta->set_name(JobName(cj->metadata().name(), scheduled));
  meta->set_namespace_(ns);
  *meta->mutable_labels() = tmpl.metadata().labels();
  *meta->mutable_annotations() = tmpl.metadata().annotations();
  (*meta->mutable_annotations())["batch.kubernetes.io/cronjob-scheduled-timestamp"] =
      zone.At(scheduled).offset == 0 ? api::Rfc3339(scheduled)
                                     : absl::FormatTime(absl::RFC3339_sec, scheduled, zone);
  *meta->add_owner_references() = ControllerRef(*cj, "batch/v1", "CronJob");
  *job.mutable_spec() = tmpl.spec();
  auto made = client_->Create<api::Job>("jobs", ns, job);
  if (!made.ok() && made.status().code() == absl::StatusCode::kAlreadyExists) {
    // Made by an earlier sync whose status write was lost: ours if it names us.
    made = client_->Get<api::Job>("jobs", ns, meta->name());
    if (made.ok() && !ControlledBy(made->metadata(), cj->metadata().uid())) {
      made = absl::AlreadyExistsError(
          fmt::format("jobs.batch \"{}\" already exists and is not ours", meta->name()));
    }
  } else if (made.ok()) {
    events_->Record(*cj, "Normal", "SuccessfulCreate", "Created job " + meta->name());
  }
  if (!made.ok()) {
    events_->Record(*cj, "Warning", "FailedCreate",
                    "Error creating job: " + std::string(made.status().message()));
    return made.status();
  }
  if (Finished(*made).empty() && !InActive(cj->status(), made->metadata().uid())) {
    api::ObjectReference* ref = cj->mutable_status()->add_active();
    ref->set_kind("Job");
    ref->set_namespace_(ns);
    ref->set_name(made->metadata().name());
    ref->set_uid(made->metadata().uid());
    ref->set_api_version("batch/v1");
    ref->set_resource_version(made->metadata().resource_version());
  }
  cj->mutable_status()->set_last_schedule_time(api::Rfc3339(scheduled));
  return absl::OkStatus();
}

absl::Status CronJobController::CleanUpFinished(api::CronJob* cj,
                                                const std::vector<JobPtr>& jobs) {
  if (!cj->metadata().deletion_timestamp().empty()) return absl::OkStatus();
  const auto& spec = cj->spec();
  for (const auto& [kind, has, limit] :
       {std::tuple{"Complete", spec.has_successful_jobs_history_limit(),
                   spec.successful_jobs_history_limit()},
        std::tuple{"Failed", spec.has_failed_jobs_history_limit(),
                   spec.failed_jobs_history_limit()}}) {
    if (!has) continue;
    std::vector<JobPtr> finished;
    for (const auto& j : jobs) {
      if (Finished(*j) == kind && j->metadata().deletion_timestamp().empty()) {
        finished.push_back(j);
      }
    }
    if (static_cast<int>(finished.size()) <= limit) continue;
    // Oldest first: by start time (none last), then by name.
    std::sort(finished.begin(), finished.end(), [](const JobPtr& a, const JobPtr& b) {
      auto sa = api::ParseRfc3339(a->status().start_time());
      auto sb = api::ParseRfc3339(b->status().start_time());
      if (sa.has_value() != sb.has_value()) return sa.has_value();
      if (sa && *sa != *sb) return *sa < *sb;
      return a->metadata().name() < b->metadata().name();
    });
    finished.resize(finished.size() - limit);
    for (const auto& j : finished) {
      MKUBE_RETURN_IF_ERROR(DeleteJob(cj, j->metadata().name(), j->metadata().uid()));
    }
  }
  return absl::OkStatus();
}

absl::Status CronJobController::DeleteJob(api::CronJob* cj, const std::string& name,
                                          const std::string& uid) {
  apiserver::DeleteRequest req;
  req.set_resource("jobs");
  req.set_namespace_(cj->metadata().namespace_());
  req.set_name(name);
  req.set_propagation_policy("Background");
  req.mutable_preconditions()->set_uid(uid);
  auto r = client_->Delete(req);
  if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) {
    events_->Record(*cj, "Warning", "FailedDelete",
                    fmt::format("Deleted job: {}", std::string(r.status().message())));
    return r.status();
  }
  if (r.ok()) events_->Record(*cj, "Normal", "SuccessfulDelete", "Deleted job " + name);
  RemoveActive(cj->mutable_status(), uid);
  return absl::OkStatus();
}

absl::Status CronJobController::WriteStatus(const api::CronJob& cj,
                                            const api::CronJobStatus& before) {
  if (api::Equal(cj.status(), before)) return absl::OkStatus();
  auto r = client_->Update<api::CronJob>("cronjobs", cj.metadata().namespace_(), cj, "status");
  if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
  return absl::OkStatus();
}

}  // namespace mkube::controller::cronjob
