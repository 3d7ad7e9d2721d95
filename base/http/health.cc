#include "base/http/health.h"

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "base/daemon.h"
#include "base/log.h"
#include "fmt/format.h"

namespace mkube::http {
namespace {

bool Verbose(const Request& req) {
  for (const auto& [k, v] : ParseQuery(req.query)) {
    if (k == "verbose" && v != "false" && v != "0") return true;
  }
  return false;
}

// Kubernetes' answer: "ok", or with ?verbose (and on failure) one line per check.
Response RunChecks(const std::string& endpoint, const std::vector<const HealthCheck*>& checks,
                   bool verbose) {
  std::string lines;
  bool failed = false;
  for (const HealthCheck* c : checks) {
    absl::Status st = c->run();
    if (st.ok()) {
      lines += fmt::format("[+]{} ok\n", c->name);
    } else {
      failed = true;
      lines += fmt::format("[-]{} failed: {}\n", c->name, std::string(st.message()));
    }
  }
  Response r{.status = failed ? 500 : 200, .content_type = "text/plain; charset=utf-8"};
  if (failed) {
    r.body = lines + fmt::format("{} check failed\n", endpoint);
  } else if (verbose) {
    r.body = lines + fmt::format("{} check passed\n", endpoint);
  } else {
    r.body = "ok";
  }
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return r;
}

}  // namespace

bool IsProbePath(const std::string& path) {
  for (const char* endpoint : {"/healthz", "/livez", "/readyz"}) {
    if (path == endpoint || path.rfind(std::string(endpoint) + "/", 0) == 0) return true;
  }
  return false;
}

bool ServeHealth(const Request& req, Exchange& ex, const HealthChecks& checks,
                 const metrics::Registry& registry) {
  if (req.method != "GET" && req.method != "HEAD") return false;
  if (req.path == "/metrics") {
    ex.Finish({.content_type = metrics::kTextContentType, .body = registry.Render()});
    return true;
  }
  for (const char* endpoint : {"healthz", "livez", "readyz"}) {
    const std::string base = fmt::format("/{}", endpoint);
    if (req.path != base && req.path.rfind(base + "/", 0) != 0) continue;
    std::vector<const HealthCheck*> list;
    for (const auto& c : checks.live) list.push_back(&c);
    if (std::string_view(endpoint) == "readyz") {
      for (const auto& c : checks.ready) list.push_back(&c);
    }
    if (req.path != base) {  // /readyz/<name>: that check alone
      const std::string name = req.path.substr(base.size() + 1);
      std::erase_if(list, [&](const HealthCheck* c) { return c->name != name; });
      if (list.empty()) {
        ex.Finish({.status = 404, .content_type = "text/plain; charset=utf-8",
                   .body = fmt::format("no check named {}\n", name)});
        return true;
      }
    }
    ex.Finish(RunChecks(endpoint, list, Verbose(req)));
    return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Server>> StartHealthServer(const std::string& listen,
                                                          HealthChecks checks,
                                                          const metrics::Registry* registry) {
  ServerOptions o;
  o.listen = listen;
  o.io_threads = 1;
  o.max_body_bytes = 64 << 10;
  auto server = std::make_unique<Server>(
      o, [checks = std::move(checks), registry](Request req, ExchangePtr ex) {
        if (!ServeHealth(req, *ex, checks, *registry)) {
          ex->Finish({.status = 404, .content_type = "text/plain; charset=utf-8",
                      .body = "404 page not found\n"});
        }
      });
  if (auto st = server->Start(); !st.ok()) return st;
  return server;
}

HealthChecks DaemonChecks(const std::atomic<bool>* synced) {
  HealthChecks checks;
  checks.live.push_back({"ping", [] { return absl::OkStatus(); }});
  checks.ready.push_back({"informer-sync", [synced] {
                            return synced->load() ? absl::OkStatus()
                                                  : absl::UnavailableError(
                                                        "the informers' caches have not synced");
                          }});
  return checks;
}

metrics::Gauge& LeaderGauge(const std::string& name) {
  return metrics::Registry::Default()
      .AddGauge("leader_election_master_status",
                "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
                "backup, 1 indicates master. 'name' is the string used to identify the lease.",
                {"name"})
      .With({name});
}

void AddStatusFlags(CLI::App& app, StatusFlags* f) {
  app.add_option("--metrics-listen", f->listen,
                 "Where to serve /healthz, /livez, /readyz and /metrics (plain HTTP; port 0: "
                 "any free port; empty: not served)")
      ->capture_default_str();
  app.add_option("--metrics-address-file", f->address_file,
                 "Write the address /metrics is served on to this file");
}

absl::StatusOr<std::unique_ptr<Server>> StartStatusServer(const StatusFlags& f,
                                                          HealthChecks checks) {
  if (f.listen.empty()) return nullptr;
  auto server = StartHealthServer(f.listen, std::move(checks), &metrics::Registry::Default());
  if (!server.ok()) return server.status();
  log::Logger("main").info("/healthz, /readyz and /metrics on http://{}", (*server)->address());
  if (auto st = daemon::WriteReadyFile(f.address_file, (*server)->address()); !st.ok()) {
    return st;
  }
  return server;
}

}  // namespace mkube::http
