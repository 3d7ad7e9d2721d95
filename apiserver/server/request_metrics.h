#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "base/metrics.h"

namespace mkube::apiserver::server {

// The HTTP code Kubernetes answers a failure with: NOT_FOUND 404, ALREADY_EXISTS and ABORTED
// 409, INVALID_ARGUMENT 422, OUT_OF_RANGE 410, UNAUTHENTICATED 401, PERMISSION_DENIED 403,
// RESOURCE_EXHAUSTED 429 (413 for a request too large), DEADLINE_EXCEEDED 504, UNAVAILABLE 503,
// UNIMPLEMENTED 405; 200 for OK.
int HttpCode(const absl::Status& st);
// A RESOURCE_EXHAUSTED that says a request was too large (413), not that there were too many
// (429).
bool TooLarge(const absl::Status& st);

// apiserver_request_total and apiserver_request_duration_seconds, with kube-apiserver's names
// and labels, for the requests of both APIs: every RequestMetrics over one registry shares the
// same families, so a scrape counts gRPC and HTTP requests together.
class RequestMetrics {
 public:
  explicit RequestMetrics(metrics::Registry* registry);

  struct Labels {
    std::string verb;  // GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE, DELETECOLLECTION
    bool dry_run = false;
    std::string group, version, resource, subresource;
    std::string scope;  // resource, namespace or cluster
  };
  // The labels of a request on `resource` ("pods", "deployments.apps" or a kind's resource
  // name), `ns` and `name` (either may be empty).
  static Labels For(std::string verb, const std::string& resource, const std::string& subresource,
                    const std::string& ns, const std::string& name);

  // One answered request; `seconds` is none for a long-running one (a watch), whose duration
  // says nothing of latency.
  void Record(const Labels& l, int code, std::optional<double> seconds);

 private:
  metrics::Family<metrics::Counter>& requests_;
  metrics::Family<metrics::Histogram>& durations_;
};

}  // namespace mkube::apiserver::server
