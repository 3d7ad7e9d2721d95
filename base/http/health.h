#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/http/server.h"
#include "base/metrics.h"

// What every daemon serves for probes and Prometheus, as Kubernetes' daemons do: /healthz,
// /livez and /readyz (each check also alone at /readyz/<name>; ?verbose lists them), and
// /metrics in the text exposition format.
namespace mkube::http {

struct HealthCheck {
  std::string name;
  std::function<absl::Status()> run;  // OK when healthy
};

struct HealthChecks {
  std::vector<HealthCheck> live;   // /livez and /healthz
  std::vector<HealthCheck> ready;  // /readyz: the live ones as well
};

// Answers `req` when its path is one of those above and returns true; false otherwise
// (nothing answered).
bool ServeHealth(const Request& req, Exchange& ex, const HealthChecks& checks,
                 const metrics::Registry& registry);

// A plain-HTTP server of those paths alone (404 for the rest): a daemon's status port.
// `listen`: host:port, port 0 for any free one.
absl::StatusOr<std::unique_ptr<Server>> StartHealthServer(const std::string& listen,
                                                          HealthChecks checks,
                                                          const metrics::Registry* registry);

}  // namespace mkube::http
