// mkube-controller-manager: the controllers that turn Deployments, ReplicaSets and
// ReplicationControllers into pods, as kube-controller-manager does; with leader election,
// one of several acts.
#include <atomic>
#include <cstdio>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "base/daemon.h"
#include "base/http/health.h"
#include "base/log.h"
#include "base/status.h"
#include "client/client.h"
#include "client/credentials.h"
#include "client/leadership.h"
#include "controller/manager.h"
#include "fmt/format.h"

namespace {

struct Flags {
  mkube::client::ApiserverFlags apiserver;
  std::string ready_file, log_level = "info";
  mkube::http::StatusFlags status;
  mkube::client::Leadership::Flags election;
  std::string controllers = "*";
  std::string grace = "50s", monitor = "5s";
  mkube::controller::ManagerOptions manager;
};

void AddWorkerFlags(CLI::App& app, mkube::controller::ManagerOptions& mo) {
  app.add_option("--concurrent-deployment-syncs", mo.deployment_workers,
                 "Deployments synced at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--concurrent-replicaset-syncs", mo.replicaset_workers,
                 "ReplicaSets (and ReplicationControllers) synced at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--concurrent-gc-syncs", mo.gc_workers,
                 "Objects the garbage collector looks at at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--concurrent-job-syncs", mo.job_workers, "Jobs synced at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--concurrent-cron-job-syncs", mo.cronjob_workers, "CronJobs synced at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
}

void AddNodeLifecycleFlags(CLI::App& app, Flags& f) {
  auto& nl = f.manager.node_lifecycle;
  app.add_option("--node-monitor-grace-period", f.grace,
                 "How long a node may go without renewing its Lease before it is Unknown")
      ->capture_default_str();
  app.add_option("--node-monitor-period", f.monitor, "How often nodes are looked at")
      ->capture_default_str();
  app.add_option("--node-eviction-rate", nl.eviction_rate,
                 "Nodes per second (per zone) given a NoExecute taint when they fail")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--secondary-node-eviction-rate", nl.secondary_eviction_rate,
                 "The same, in a large zone that is mostly unhealthy")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--large-cluster-size-threshold", nl.large_cluster_threshold,
                 "Zones with more nodes than this are large")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--unhealthy-zone-threshold", nl.unhealthy_zone_threshold,
                 "The fraction of not-ready nodes (at least 3) that makes a zone unhealthy")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
}

void AddFlags(CLI::App& app, Flags& f) {
  f.apiserver.Register(app, "the controller-manager's");
  app.add_option("--controllers", f.controllers,
                 fmt::format("Controllers to run, comma-separated: '*' for all, 'name' to add one, "
                             "'-name' to leave one out (known: {})",
                             fmt::join(mkube::controller::Manager::KnownControllers(), ", ")))
      ->capture_default_str();
  AddWorkerFlags(app, f.manager);
  AddNodeLifecycleFlags(app, f);
  f.election.resource_name = "kube-controller-manager";
  mkube::client::Leadership::Register(app, &f.election, "one controller-manager of several acts");
  app.add_option("--ready-file", f.ready_file, "Write this file once the caches have synced");
  mkube::http::AddStatusFlags(app, &f.status);
  mkube::daemon::AddLogLevelOption(app, &f.log_level);
}

// Checks what the flags' parsers could not and completes the manager's options; the error
// names the flag.
absl::Status CheckFlags(Flags& f) {
  auto& mo = f.manager;
  mo.controllers = absl::StrSplit(f.controllers, ',', absl::SkipEmpty());
  MKUBE_RETURN_IF_ERROR(mkube::controller::Manager::CheckControllers(mo.controllers));
  MKUBE_ASSIGN_OR_RETURN(auto grace,
                         mkube::daemon::PositiveDuration("--node-monitor-grace-period", f.grace));
  MKUBE_ASSIGN_OR_RETURN(auto monitor,
                         mkube::daemon::PositiveDuration("--node-monitor-period", f.monitor));
  mo.node_lifecycle.grace_period = grace;
  mo.node_lifecycle.monitor_period = monitor;
  return mkube::client::Leadership::Check(f.election);
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "mkube-controller-manager: %s\n", what.c_str());
  return 1;
}

// Runs the controllers, once leading, until a termination signal comes.
int Run(const Flags& f, const mkube::client::ClientOptions& copts) {
  spdlog::logger& log = mkube::log::Logger("main");
  mkube::client::GrpcClient client(copts);
  mkube::controller::Manager manager(&client, f.manager);
  std::atomic<bool> synced{false};
  auto status = mkube::http::StartStatusServer(f.status, mkube::http::DaemonChecks(&synced));
  if (!status.ok()) return Fail(std::string(status.status().message()));
  while (!manager.StartInformers(std::chrono::seconds(30))) {
    log.warn("the caches have not synced after 30 s; still waiting");
  }
  synced = true;
  if (auto st = mkube::daemon::WriteReadyFile(f.ready_file, f.election.identity); !st.ok()) {
    manager.Stop();
    return Fail(std::string(st.message()));
  }
  mkube::client::Leadership leadership(copts, f.election, [&] {
    log.info("leading: starting controllers {}", fmt::join(manager.Running(), ", "));
    mkube::http::LeaderGauge(f.election.resource_name).Set(1);
    manager.StartControllers();
  });
  log.info("mkube-controller-manager {} watching apiserver {}", f.election.identity,
           f.apiserver.address);

  const int sig = mkube::daemon::WaitForTermination();
  log.info("signal {}: shutting down", sig);
  manager.Stop();
  leadership.Release();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"mkube-controller-manager: runs the controllers"};
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);

  if (auto st = CheckFlags(flags); !st.ok()) return Fail(std::string(st.message()));
  auto copts = flags.apiserver.Options();
  if (!copts.ok()) return Fail(std::string(copts.status().message()));
  mkube::daemon::Setup("controller-manager", flags.log_level);
  return Run(flags, *copts);
}
