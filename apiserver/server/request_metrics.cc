#include "apiserver/server/request_metrics.h"

#include "absl/strings/match.h"
#include "api/kinds.h"

namespace mkube::apiserver::server {

int HttpCode(const absl::Status& st) {
  switch (st.code()) {
    case absl::StatusCode::kOk: return 200;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kAlreadyExists: return 409;
    case absl::StatusCode::kAborted: return 409;
    case absl::StatusCode::kInvalidArgument: return 422;
    case absl::StatusCode::kFailedPrecondition: return 409;
    case absl::StatusCode::kOutOfRange: return 410;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kResourceExhausted:
      return TooLarge(st) ? 413 : 429;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kUnimplemented: return 405;
    case absl::StatusCode::kCancelled: return 499;
    default: return 500;
  }
}

bool TooLarge(const absl::Status& st) {
  return st.code() == absl::StatusCode::kResourceExhausted &&
         absl::StrContains(st.message(), "too large");
}

RequestMetrics::RequestMetrics(metrics::Registry* registry)
    : requests_(registry->AddCounter(
          "apiserver_request_total",
          "Counter of apiserver requests broken out for each verb, dry run value, group, "
          "version, resource, scope, component, and HTTP response code.",
          {"verb", "dry_run", "group", "version", "resource", "subresource", "scope",
           "component", "code"})),
      durations_(registry->AddHistogram(
          "apiserver_request_duration_seconds",
          "Response latency distribution in seconds for each verb, dry run value, group, "
          "version, resource, subresource, scope and component.",
          {"verb", "dry_run", "group", "version", "resource", "subresource", "scope",
           "component"},
          metrics::LatencyBuckets())) {}

RequestMetrics::Labels RequestMetrics::For(std::string verb, const std::string& resource,
                                           const std::string& subresource, const std::string& ns,
                                           const std::string& name) {
  Labels l{.verb = std::move(verb), .resource = resource, .subresource = subresource};
  if (const api::KindInfo* k = api::FindResource(resource)) {
    l.group = k->group;
    l.version = k->version;
    l.resource = k->resource;
  }
  l.scope = !name.empty() ? "resource" : ns.empty() ? "cluster" : "namespace";
  return l;
}

void RequestMetrics::Record(const Labels& l, int code, std::optional<double> seconds) {
  const std::string dry = l.dry_run ? "All" : "";
  requests_
      .With({l.verb, dry, l.group, l.version, l.resource, l.subresource, l.scope, "apiserver",
             std::to_string(code)})
      .Inc();
  if (!seconds) return;
  durations_.With({l.verb, dry, l.group, l.version, l.resource, l.subresource, l.scope, "apiserver"})
      .Observe(*seconds);
}

}  // namespace mkube::apiserver::server
