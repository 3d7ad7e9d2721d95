// mkube-scheduler: binds pods that name no node to the node its profile's filters and scores
// choose, as kube-scheduler does; with leader election, one of several schedules.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/log.h"
#include "client/client.h"
#include "client/credentials.h"
#include "client/daemon.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "fmt/format.h"
#include "scheduler/framework/config.h"
#include "scheduler/internal/scheduler.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "mkube-scheduler: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string apiserver = "127.0.0.1:6443", token_file, ca_file, config_file, ready_file;
  bool insecure = false;
  std::string log_level = "info";
  mkube::client::Leadership::Flags election;
  election.resource_name = "kube-scheduler";
  int bind_workers = 8;

  CLI::App app{"mkube-scheduler: assigns pods to nodes"};
  app.add_option("--apiserver", apiserver, "The apiserver's address")->capture_default_str();
  app.add_option("--token-file", token_file, "File with the scheduler's bearer token")->required();
  app.add_option("--ca-file", ca_file, "CA that signed the apiserver's certificate");
  app.add_flag("--insecure-plaintext", insecure, "Talk to the apiserver without TLS");
  app.add_option("--config", config_file,
                 "A KubeSchedulerConfiguration file (profiles, plugins, weights)");
  mkube::client::Leadership::Register(app, &election, "one scheduler of several schedules");
  app.add_option("--bind-workers", bind_workers, "Bindings posted at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--ready-file", ready_file, "Write this file once the caches have synced");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  CLI11_PARSE(app, argc, argv);
  // Debian's Abseil otherwise checks lock order on every absl::Mutex acquisition, under one
  // process-wide lock (a few percent of a busy daemon's CPU).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  mkube::log::Setup("scheduler", spdlog::level::from_str(log_level));
  spdlog::logger& log = mkube::log::Logger("main");

  if (auto st = mkube::client::Leadership::Check(election); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  auto copts = mkube::client::DaemonClientOptions(apiserver, token_file, ca_file, insecure);
  if (!copts.ok()) return Fail(std::string(copts.status().message()));

  mkube::client::BlockTerminationSignals();

  mkube::client::GrpcClient client(*copts);
  mkube::client::Informer<mkube::api::ReplicaSet> replica_sets(&client, "replicasets");
  mkube::client::Informer<mkube::api::Namespace> namespaces(&client, "namespaces");
  // Profiles need the scheduler as their handle, and the scheduler needs the profiles: the
  // handle forwards to it once it exists.
  struct Forward : mkube::scheduler::framework::Handle {
    const mkube::scheduler::Scheduler* to = nullptr;
    std::vector<mkube::api::LabelSelector> OwnerSelectors(
        const mkube::api::Pod& pod) const override {
      return to ? to->OwnerSelectors(pod) : std::vector<mkube::api::LabelSelector>{};
    }
    mkube::scheduler::framework::LabelMap NamespaceLabels(const std::string& name) const override {
      return to ? to->NamespaceLabels(name) : mkube::scheduler::framework::LabelMap();
    }
    std::vector<std::string> NamespacesMatching(
        const mkube::api::Selector& selector) const override {
      return to ? to->NamespacesMatching(selector) : std::vector<std::string>{};
    }
  } handle;
  std::string config_text;
  if (!config_file.empty()) {
    std::ifstream in(config_file);
    if (!in) return Fail("cannot read --config " + config_file);
    std::stringstream ss;
    ss << in.rdbuf();
    config_text = ss.str();
  }
  auto profiles = mkube::scheduler::framework::LoadConfig(config_text, &handle);
  if (!profiles.ok()) {
    return Fail(
        fmt::format("--config {}: {}", config_file, std::string(profiles.status().message())));
  }
  std::vector<std::string> names;
  for (const auto& p : *profiles) names.push_back(p.scheduler_name);

  mkube::client::EventRecorder events(&client, "default-scheduler", "");
  mkube::scheduler::SchedulerOptions sopts;
  sopts.bind_workers = bind_workers;
  mkube::scheduler::Scheduler scheduler(&client, &events, std::move(*profiles), sopts);
  handle.to = &scheduler;
  scheduler.SetReplicaSets(&replica_sets);
  scheduler.SetNamespaces(&namespaces);

  mkube::client::Informer<mkube::api::Node> nodes(&client, "nodes");
  mkube::client::Informer<mkube::api::Pod> pods(&client, "pods");
  nodes.AddHandlers(scheduler.NodeHandlers());
  pods.AddHandlers(scheduler.PodHandlers());
  replica_sets.Start();
  namespaces.Start();
  nodes.Start();
  // Nodes first, so that the first pods find them.
  nodes.WaitForCacheSync(std::chrono::seconds(30));
  pods.Start();
  if (!pods.WaitForCacheSync(std::chrono::seconds(30)) || !nodes.HasSynced()) {
    log.warn("the caches have not synced after 30 s; scheduling starts once they have");
    while (!pods.HasSynced() || !nodes.HasSynced())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  std::thread loop;
  auto start_scheduling = [&] {
    log.info("scheduling pods for profiles {}", fmt::join(names, ", "));
    loop = std::thread([&scheduler] { scheduler.Run(); });
  };
  mkube::client::Leadership leadership(*copts, election, start_scheduling);
  mkube::client::WriteReadyFile(ready_file, election.identity);
  log.info("mkube-scheduler {} watching apiserver {}", election.identity, apiserver);

  const int sig = mkube::client::WaitForTermination();
  log.info("signal {}: shutting down", sig);
  scheduler.Stop();
  if (loop.joinable()) loop.join();
  scheduler.WaitForBindings();
  leadership.Release();
  pods.Stop();
  nodes.Stop();
  replica_sets.Stop();
  namespaces.Stop();
  events.Flush();
  return 0;
}
