#pragma once

#include <atomic>
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
namespace CLI {
class App;
}  // namespace CLI

namespace mkube::http {

struct HealthCheck {
  std::string name;
  std::function<absl::Status()> run;  // OK when healthy
};

struct HealthChecks {
  std::vector<HealthCheck> live;   // /livez and /healthz
  std::vector<HealthCheck> ready;  // /readyz: the live ones as well
};

// Whether `path` is /healthz, /livez or /readyz (or one check under them).
bool IsProbePath(const std::string& path);

// Answers `req` when its path is one of those above and returns true; false otherwise
// (nothing answered). The checks run on the calling thread.
bool ServeHealth(const Request& req, Exchange& ex, const HealthChecks& checks,
                 const metrics::Registry& registry);

// A plain-HTTP server of those paths alone (404 for the rest): a daemon's status port.
// `listen`: host:port, port 0 for any free one.
absl::StatusOr<std::unique_ptr<Server>> StartHealthServer(const std::string& listen,
                                                          HealthChecks checks,
                                                          const metrics::Registry* registry);

// What a client daemon's probes check: /livez always passes ("ping"), /readyz once `synced`
// (its informers' caches have synced: "informer-sync").
HealthChecks DaemonChecks(const std::atomic<bool>* synced);
// leader_election_master_status{name}: 1 while this process leads `name`, as Kubernetes'
// daemons report it.
metrics::Gauge& LeaderGauge(const std::string& name);

// A daemon's status port, as its flags say: --metrics-listen (127.0.0.1:0 by default: any free
// port on loopback; empty: none) and --metrics-address-file.
struct StatusFlags {
  std::string listen = "127.0.0.1:0";
  std::string address_file;
};
void AddStatusFlags(CLI::App& app, StatusFlags* f);
// Starts the status port with the process's metrics (metrics::Registry::Default()), logs where
// it is and writes that to the address file; null when not asked for.
absl::StatusOr<std::unique_ptr<Server>> StartStatusServer(const StatusFlags& f,
                                                          HealthChecks checks);

}  // namespace mkube::http
