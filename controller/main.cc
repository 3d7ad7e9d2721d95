// mkube-controller-manager: the controllers that turn Deployments, ReplicaSets and
// ReplicationControllers into pods, as kube-controller-manager does; with leader election,
// one of several acts.
#include <cstdio>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "api/log.h"
#include "client/client.h"
#include "client/credentials.h"
#include "client/daemon.h"
#include "controller/manager.h"
#include "fmt/format.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "mkube-controller-manager: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string apiserver = "127.0.0.1:6443", token_file, ca_file, ready_file, log_level = "info";
  bool insecure = false;
  mkube::client::Leadership::Flags election;
  election.resource_name = "kube-controller-manager";
  std::string controllers = "*";
  mkube::controller::ManagerOptions mo;

  CLI::App app{"mkube-controller-manager: runs the controllers"};
  app.add_option("--apiserver", apiserver, "The apiserver's address")->capture_default_str();
  app.add_option("--token-file", token_file, "File with the controller-manager's bearer token")
      ->required();
  app.add_option("--ca-file", ca_file, "CA that signed the apiserver's certificate");
  app.add_flag("--insecure-plaintext", insecure, "Talk to the apiserver without TLS");
  app.add_option("--controllers", controllers,
                 fmt::format("Controllers to run, comma-separated: '*' for all, 'name' to add one, "
                             "'-name' to leave one out (known: {})",
                             fmt::join(mkube::controller::Manager::KnownControllers(), ", ")))
      ->capture_default_str();
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
  std::string grace = "50s", monitor = "5s";
  app.add_option("--node-monitor-grace-period", grace,
                 "How long a node may go without renewing its Lease before it is Unknown")
      ->capture_default_str();
  app.add_option("--node-monitor-period", monitor, "How often nodes are looked at")
      ->capture_default_str();
  app.add_option("--node-eviction-rate", mo.node_lifecycle.eviction_rate,
                 "Nodes per second (per zone) given a NoExecute taint when they fail")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--secondary-node-eviction-rate", mo.node_lifecycle.secondary_eviction_rate,
                 "The same, in a large zone that is mostly unhealthy")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--large-cluster-size-threshold", mo.node_lifecycle.large_cluster_threshold,
                 "Zones with more nodes than this are large")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--unhealthy-zone-threshold", mo.node_lifecycle.unhealthy_zone_threshold,
                 "The fraction of not-ready nodes (at least 3) that makes a zone unhealthy")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  mkube::client::Leadership::Register(app, &election, "one controller-manager of several acts");
  app.add_option("--ready-file", ready_file, "Write this file once the caches have synced");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  CLI11_PARSE(app, argc, argv);
  // Debian's Abseil otherwise checks lock order on every absl::Mutex acquisition, under one
  // process-wide lock (a few percent of a busy daemon's CPU).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  mkube::log::Setup("controller-manager", spdlog::level::from_str(log_level));
  spdlog::logger& log = mkube::log::Logger("main");

  mo.controllers = absl::StrSplit(controllers, ',', absl::SkipEmpty());
  if (auto st = mkube::controller::Manager::CheckControllers(mo.controllers); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  auto grace_period = mkube::client::PositiveDuration("--node-monitor-grace-period", grace);
  auto monitor_period = mkube::client::PositiveDuration("--node-monitor-period", monitor);
  for (const auto* d : {&grace_period, &monitor_period}) {
    if (!d->ok()) return Fail(std::string(d->status().message()));
  }
  mo.node_lifecycle.grace_period = *grace_period;
  mo.node_lifecycle.monitor_period = *monitor_period;
  if (auto st = mkube::client::Leadership::Check(election); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  auto copts = mkube::client::DaemonClientOptions(apiserver, token_file, ca_file, insecure);
  if (!copts.ok()) return Fail(std::string(copts.status().message()));

  mkube::client::BlockTerminationSignals();
  mkube::client::GrpcClient client(*copts);
  mkube::controller::Manager manager(&client, mo);
  while (!manager.StartInformers(std::chrono::seconds(30))) {
    log.warn("the caches have not synced after 30 s; still waiting");
  }
  auto start = [&] {
    log.info("leading: starting controllers {}", fmt::join(manager.Running(), ", "));
    manager.StartControllers();
  };
  mkube::client::Leadership leadership(*copts, election, start);
  mkube::client::WriteReadyFile(ready_file, election.identity);
  log.info("mkube-controller-manager {} watching apiserver {}", election.identity, apiserver);

  const int sig = mkube::client::WaitForTermination();
  log.info("signal {}: shutting down", sig);
  manager.Stop();
  leadership.Release();
  return 0;
}
