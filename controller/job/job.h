#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/labels.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "controller/internal/expectations.h"
#include "controller/internal/pod_control.h"
#include "controller/internal/pods.h"
#include "proto/api/apps.pb.h"

namespace mkube::controller::job {

// How long failed pods hold their replacement back, as Kubernetes' Job controller: 10 s after
// the last failure, doubling with each failure since the last success, at most 10 minutes.
inline constexpr absl::Duration kFailureBackoff = absl::Seconds(10);
inline constexpr absl::Duration kMaxFailureBackoff = absl::Minutes(10);
absl::Duration FailureBackoff(const std::vector<PodPtr>& pods, absl::Time now);

// Kubernetes' Job controller (NonIndexed completions): runs up to `parallelism` pods at once
// until `completions` of them have succeeded (or, without completions, until one has and
// none runs), then Complete; Failed when failures (with OnFailure, container restarts too)
// pass backoffLimit (BackoffLimitExceeded) or the job has run longer than
// activeDeadlineSeconds (DeadlineExceeded), its running pods deleted either way. A suspended
// job runs no pod. A finished job with ttlSecondsAfterFinished is deleted that long after it
// finished (the TTL-after-finished controller's part). A pod that fails (restartPolicy Never)
// is replaced after the back-off above.
class JobController final : public Controller {
 public:
  using JobPtr = std::shared_ptr<const api::Job>;
  JobController(client::ApiClient* client, client::Informer<api::Job>* jobs,
                client::Informer<api::Pod>* pods, client::EventRecorder* events,
                client::Clock* clock);
  ~JobController() override { Stop(); }

  absl::Status Sync(const std::string& key) override;

 private:
  // Its pods, orphans that match adopted (as client-go's ControllerRefManager).
  std::vector<PodPtr> ClaimPods(const api::Job& job, const api::Selector& selector,
                                absl::Status* error);
  void OnPod(const PodPtr& pod, bool added, bool deleted);
  absl::Status Finish(const api::Job& job, api::JobStatus* status, const std::string& type,
                      const std::string& reason, const std::string& message,
                      const std::vector<PodPtr>& active);
  absl::Status ManageActive(const api::Job& job, const std::string& key,
                            const std::vector<PodPtr>& active, int32_t want);
  absl::Status CleanUpFinished(const api::Job& job);
  absl::Status WriteStatus(const api::Job& job, const api::JobStatus& status);

  client::ApiClient* const client_;
  client::Informer<api::Job>* const jobs_;
  client::Informer<api::Pod>* const pods_;
  client::EventRecorder* const events_;
  PodControl pod_control_;
  Expectations expectations_;
};

}  // namespace mkube::controller::job
