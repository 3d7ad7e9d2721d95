// mkube-controller-manager: the controllers that turn Deployments, ReplicaSets and
// ReplicationControllers into pods, as kube-controller-manager does; with leader election,
// one of several acts.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "api/log.h"
#include "client/client.h"
#include "client/credentials.h"
#include "client/daemon.h"
#include "client/leader_election.h"
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
  bool insecure = false, leader_elect = true;
  std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s";
  std::string lease_name = "kube-controller-manager", lease_namespace = "kube-system";
  std::string identity = mkube::client::Hostname() + "_" + std::to_string(getpid());
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
  app.add_option("--leader-elect", leader_elect,
                 "Take part in leader election (one controller-manager of several acts)")
      ->capture_default_str();
  app.add_option("--leader-elect-lease-duration", lease_duration,
                 "How long a leader's lease lasts unrenewed")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", renew_deadline,
                 "How long a leader tries to renew before it gives up")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", retry_period, "How often candidates try")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-name", lease_name, "The Lease the candidates race for")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-namespace", lease_namespace, "Its namespace")
      ->capture_default_str();
  app.add_option("--identity", identity, "This candidate's name in the Lease")
      ->capture_default_str();
  app.add_option("--ready-file", ready_file, "Write this file once the caches have synced");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  CLI11_PARSE(app, argc, argv);
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
  auto lease = mkube::client::PositiveDuration("--leader-elect-lease-duration", lease_duration);
  auto renew = mkube::client::PositiveDuration("--leader-elect-renew-deadline", renew_deadline);
  auto retry = mkube::client::PositiveDuration("--leader-elect-retry-period", retry_period);
  for (const auto* d : {&lease, &renew, &retry}) {
    if (!d->ok()) return Fail(std::string(d->status().message()));
  }
  if (*renew >= *lease) {
    return Fail("--leader-elect-renew-deadline must be shorter than the lease duration");
  }
  auto copts = mkube::client::DaemonClientOptions(apiserver, token_file, ca_file, insecure);
  if (!copts.ok()) return Fail(std::string(copts.status().message()));

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  mkube::client::GrpcClient client(*copts);
  mkube::controller::Manager manager(&client, mo);
  while (!manager.StartInformers(std::chrono::seconds(30))) {
    log.warn("the caches have not synced after 30 s; still waiting");
  }
  auto start = [&] {
    log.info("leading: starting controllers {}", fmt::join(manager.Running(), ", "));
    manager.StartControllers();
  };
  std::unique_ptr<mkube::client::LeaderElector> elector;
  std::atomic<bool> shutting_down{false};
  if (leader_elect) {
    mkube::client::LeaderElector::Config lc;
    lc.lease_namespace = lease_namespace;
    lc.lease_name = lease_name;
    lc.identity = identity;
    lc.lease_duration = *lease;
    lc.renew_deadline = *renew;
    lc.retry_period = *retry;
    lc.on_started_leading = start;
    lc.on_stopped_leading = [&log, &shutting_down] {
      if (shutting_down.load()) return;  // we gave the lease up ourselves
      // As kube-controller-manager: one that lost its lease may have raced another; it exits
      // and starts again as a candidate.
      log.error("leader election lost: exiting");
      std::_Exit(1);
    };
    elector = std::make_unique<mkube::client::LeaderElector>(&client, lc);
    elector->Start();
  } else {
    start();
  }
  mkube::client::WriteReadyFile(ready_file, identity);
  log.info("mkube-controller-manager {} watching apiserver {}", identity, apiserver);

  int sig = 0;
  sigwait(&signals, &sig);
  log.info("signal {}: shutting down", sig);
  shutting_down = true;
  manager.Stop();
  if (elector) elector->Stop();
  return 0;
}
