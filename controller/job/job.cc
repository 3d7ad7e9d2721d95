#include "controller/job/job.h"

#include <algorithm>
#include <optional>
#include <set>

#include "api/labels.h"
#include "api/object.h"
#include "base/status.h"
#include "controller/internal/claim.h"
#include "controller/internal/indexes.h"
#include "controller/internal/job_status.h"
#include "controller/internal/owner.h"
#include "fmt/format.h"

namespace mkube::controller::job {
namespace {

bool Finished(const api::JobStatus& status) { return FinishedCondition(status) != nullptr; }

int32_t Restarts(const api::Pod& pod) {
  int32_t n = 0;
  for (const auto& s : pod.status().container_statuses()) n += s.restart_count();
  return n;
}

// When a finished pod finished: its containers' last end, else when it stopped being ready,
// else when it was made.
std::optional<absl::Time> FinishTime(const api::Pod& pod) {
  std::optional<absl::Time> at;
  for (const auto& s : pod.status().container_statuses()) {
    if (auto t = api::ParseRfc3339(s.state().terminated().finished_at()); t && (!at || *at < *t)) {
      at = t;
    }
  }
  if (at) return at;
  for (const auto& c : pod.status().conditions()) {
    if (c.type() != "Ready") continue;
    if (auto t = api::ParseRfc3339(c.last_transition_time())) return t;
  }
  return api::ParseRfc3339(pod.metadata().creation_timestamp());
}

}  // namespace

absl::Duration FailureBackoff(const std::vector<PodPtr>& pods, absl::Time now) {
  std::optional<absl::Time> last_success, last_failure;
  std::vector<absl::Time> failures;
  for (const auto& p : pods) {
    const std::string& phase = p->status().phase();
    if (phase != "Succeeded" && phase != "Failed") continue;
    const absl::Time at = FinishTime(*p).value_or(now);
    if (phase == "Succeeded") {
      if (!last_success || *last_success < at) last_success = at;
    } else {
      failures.push_back(at);
      if (!last_failure || *last_failure < at) last_failure = at;
    }
  }
  int count = 0;
  for (absl::Time at : failures) count += !last_success || at > *last_success;
  if (count == 0) return absl::ZeroDuration();
  absl::Duration delay = kFailureBackoff;
  for (int i = 1; i < count && delay < kMaxFailureBackoff; ++i) delay *= 2;
  delay = std::min(delay, kMaxFailureBackoff);
  return std::max(absl::ZeroDuration(), *last_failure + delay - now);
}

namespace {

}  // namespace

JobController::JobController(client::ApiClient* client, client::Informer<api::Job>* jobs,
                             client::Informer<api::Pod>* pods, client::EventRecorder* events,
                             client::Clock* clock)
    : Controller("job-controller", clock),
      client_(client),
      jobs_(jobs),
      pods_(pods),
      events_(events),
      pod_control_(client, events),
      expectations_(clock) {
  IndexByController(pods_);
  IndexOrphans(pods_);
  jobs_->AddHandlers({
      .on_add = [this](const JobPtr& j) { Enqueue(*j); },
      .on_update = [this](const JobPtr&, const JobPtr& j) { Enqueue(*j); },
      .on_delete =
          [this](const JobPtr& j) {
            expectations_.Delete(client::KeyOf(*j));
          },
  });
  pods_->AddHandlers({
      .on_add = [this](const PodPtr& p) { OnPod(p, true, false); },
      .on_update = [this](const PodPtr&, const PodPtr& p) { OnPod(p, false, false); },
      .on_delete = [this](const PodPtr& p) { OnPod(p, false, true); },
  });
}

void JobController::OnPod(const PodPtr& pod, bool added, bool deleted) {
  JobPtr j = ResolveControllerRef(*jobs_, pod->metadata().namespace_(),
                                  ControllerOf(pod->metadata()), "Job");
  if (!j) return;
  const std::string key = client::KeyOf(*j);
  if (deleted || !pod->metadata().deletion_timestamp().empty()) {
    expectations_.DeletionObserved(key, client::KeyOf(*pod));
  } else if (added) {
    expectations_.CreationObserved(key);
  }
  Enqueue(*j);
}

std::vector<PodPtr> JobController::ClaimPods(const api::Job& job, const api::Selector& selector,
                                             absl::Status* error) {
  auto can_adopt = [this, &job]() -> absl::Status {
    MKUBE_ASSIGN_OR_RETURN(auto fresh, client_->Get<api::Job>("jobs", job.metadata().namespace_(),
                                                              job.metadata().name()));
    if (fresh.metadata().uid() != job.metadata().uid() ||
        !fresh.metadata().deletion_timestamp().empty()) {
      return absl::AbortedError(fmt::format("Job {} is gone or going", client::KeyOf(job)));
    }
    return absl::OkStatus();
  };
  return Claim<api::Pod>(client_, "pods", job, ControllerRef(job, "batch/v1", "Job"), selector,
                         OwnedOrOrphaned(*pods_, job.metadata()), can_adopt, error);
}

absl::Status JobController::Sync(const std::string& key) {
  JobPtr job = jobs_->Get(key);
  if (!job) {
    expectations_.Delete(key);
    return absl::OkStatus();
  }
  if (!job->metadata().deletion_timestamp().empty()) return absl::OkStatus();
  if (Finished(job->status())) return CleanUpFinished(*job);
  auto selector = api::Selector::FromLabelSelector(job->spec().selector());
  if (!selector.ok() || selector->empty()) return absl::OkStatus();
  absl::Status error;
  const std::vector<PodPtr> mine = ClaimPods(*job, *selector, &error);
  if (!error.ok()) return error;
  std::vector<PodPtr> active;
  int32_t succeeded = 0, failed = 0, ready = 0, restarts = 0;
  for (const auto& p : mine) {
    const std::string& phase = p->status().phase();
    if (phase == "Succeeded") {
      ++succeeded;
    } else if (phase == "Failed") {
      ++failed;
    } else if (p->metadata().deletion_timestamp().empty()) {
      active.push_back(p);
      if (IsReady(*p)) ++ready;
      restarts += Restarts(*p);
    }
  }
  const absl::Time now = clock_->Now();
  api::JobStatus status = job->status();
  // Finished pods may be deleted by hand: the counts never go back.
  status.set_succeeded(std::max(status.succeeded(), succeeded));
  status.set_failed(std::max(status.failed(), failed));
  status.set_active(static_cast<int32_t>(active.size()));
  status.set_ready(ready);
  const bool suspended = job->spec().suspend();
  if (status.start_time().empty() && !suspended) status.set_start_time(api::Rfc3339(now));

  const auto& spec = job->spec();
  const int32_t backoff_limit = spec.has_backoff_limit() ? spec.backoff_limit() : 6;
  const bool on_failure = spec.template_().spec().restart_policy() == "OnFailure";
  if (status.failed() + (on_failure ? restarts : 0) > backoff_limit) {
    return Finish(*job, &status, "Failed", "BackoffLimitExceeded",
                  "Job has reached the specified backoff limit", active);
  }
  if (spec.has_active_deadline_seconds() && !suspended) {
    auto start = api::ParseRfc3339(status.start_time());
    const absl::Time deadline = start.value_or(now) + absl::Seconds(spec.active_deadline_seconds());
    if (now >= deadline) {
      return Finish(*job, &status, "Failed", "DeadlineExceeded",
                    "Job was active longer than specified deadline", active);
    }
    EnqueueAfter(*job, deadline - now);
  }
  const int32_t parallelism = spec.has_parallelism() ? spec.parallelism() : 1;
  int32_t want;
  if (spec.has_completions()) {
    if (status.succeeded() >= spec.completions()) {
      return Finish(*job, &status, "Complete", "", "", active);
    }
    want = std::min(parallelism, spec.completions() - status.succeeded());
  } else {
    // A work queue: done once one pod has succeeded and none is left running.
    if (status.succeeded() > 0 && active.empty()) {
      return Finish(*job, &status, "Complete", "", "", active);
    }
    want = status.succeeded() > 0 ? 0 : parallelism;
  }
  if (suspended) want = 0;
  // Pods that failed hold their replacements back (restartPolicy OnFailure restarts in place).
  if (static_cast<int32_t>(active.size()) < want && !on_failure) {
    if (absl::Duration wait = FailureBackoff(mine, now); wait > absl::ZeroDuration()) {
      want = static_cast<int32_t>(active.size());
      EnqueueAfter(*job, wait);
    }
  }
  if (expectations_.Satisfied(key)) error = ManageActive(*job, key, active, want);
  if (auto st = WriteStatus(*job, status); !st.ok() && error.ok()) error = st;
  return error;
}

absl::Status JobController::ManageActive(const api::Job& job, const std::string& key,
                                         const std::vector<PodPtr>& active, int32_t want) {
  const int diff = static_cast<int>(active.size()) - want;
  if (diff < 0) {
    const int n = -diff;
    expectations_.ExpectCreations(key, n);
    const api::Pod pod = PodFromTemplate(job.spec().template_(), job.metadata().namespace_(),
                                         job.metadata().name(),
                                         ControllerRef(job, "batch/v1", "Job"));
    absl::Status error;
    const int made = SlowStartBatch(
        n, [&](int, auto done) { pod_control_.Create(job, pod, std::move(done)); }, &error);
    for (int i = made; i < n; ++i) expectations_.CreationObserved(key);
    return error;
  }
  if (diff > 0) {
    std::vector<PodPtr> victims = active;
    SortForDeletion(&victims);
    victims.resize(diff);
    std::set<std::string> keys;
    for (const auto& p : victims) keys.insert(client::KeyOf(*p));
    expectations_.ExpectDeletions(key, keys);
    for (const auto& p : victims) {
      if (auto st = pod_control_.Delete(job, *p); !st.ok()) {
        expectations_.DeletionObserved(key, client::KeyOf(*p));
        return st;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status JobController::Finish(const api::Job& job, api::JobStatus* status,
                                   const std::string& type, const std::string& reason,
                                   const std::string& message, const std::vector<PodPtr>& active) {
  for (const auto& p : active) {
    MKUBE_RETURN_IF_ERROR(pod_control_.Delete(job, *p));
  }
  const std::string now = api::Rfc3339(clock_->Now());
  status->set_active(0);
  status->set_ready(0);
  api::Condition* c = status->add_conditions();
  c->set_type(type);
  c->set_status("True");
  c->set_reason(reason);
  c->set_message(message);
  c->set_last_probe_time(now);
  c->set_last_transition_time(now);
  if (type == "Complete") {
    status->set_completion_time(now);
    events_->Record(job, "Normal", "Completed", "Job completed");
  } else {
    events_->Record(job, "Warning", reason, message);
  }
  return WriteStatus(job, *status);
}

absl::Status JobController::CleanUpFinished(const api::Job& job) {
  if (!job.spec().has_ttl_seconds_after_finished()) return absl::OkStatus();
  const api::Condition* finished = FinishedCondition(job.status());
  auto at = api::ParseRfc3339(finished ? finished->last_transition_time()
                                       : job.status().completion_time());
  if (!at) return absl::OkStatus();
  const absl::Time expire = *at + absl::Seconds(job.spec().ttl_seconds_after_finished());
  const absl::Time now = clock_->Now();
  if (now < expire) {
    EnqueueAfter(job, expire - now);
    return absl::OkStatus();
  }
  apiserver::DeleteRequest req;
  req.set_resource("jobs");
  req.set_namespace_(job.metadata().namespace_());
  req.set_name(job.metadata().name());
  req.set_propagation_policy("Foreground");
  req.mutable_preconditions()->set_uid(job.metadata().uid());
  auto r = client_->Delete(req);
  if (r.ok() || r.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
  return r.status();
}

absl::Status JobController::WriteStatus(const api::Job& job, const api::JobStatus& status) {
  if (api::Equal(status, job.status())) return absl::OkStatus();
  api::Job copy = job;
  *copy.mutable_status() = status;
  auto r = client_->Update<api::Job>("jobs", job.metadata().namespace_(), copy, "status");
  if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
  return absl::OkStatus();
}

}  // namespace mkube::controller::job
