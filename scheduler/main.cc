// mkube-scheduler: binds pods that name no node to the node its profile's filters and scores
// choose, as kube-scheduler does; with leader election, one of several schedules.

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "CLI/CLI.hpp"
#include "base/daemon.h"
#include "base/http/health.h"
#include "base/log.h"
#include "client/client.h"
#include "client/credentials.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/leadership.h"
#include "fmt/format.h"
#include "scheduler/framework/config.h"
#include "scheduler/internal/scheduler.h"

namespace {

using mkube::client::Informer;

struct Flags {
  mkube::client::ApiserverFlags apiserver;
  std::string config_file, ready_file, log_level = "info";
  mkube::http::StatusFlags status;
  mkube::client::Leadership::Flags election;
  int bind_workers = 8;
};

void AddFlags(CLI::App& app, Flags& f) {
  f.apiserver.Register(app, "the scheduler's");
  app.add_option("--config", f.config_file,
                 "A KubeSchedulerConfiguration file (profiles, plugins, weights)");
  f.election.resource_name = "kube-scheduler";
  mkube::client::Leadership::Register(app, &f.election, "one scheduler of several schedules");
  app.add_option("--bind-workers", f.bind_workers, "Bindings posted at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--ready-file", f.ready_file, "Write this file once the caches have synced");
  mkube::http::AddStatusFlags(app, &f.status);
  mkube::daemon::AddLogLevelOption(app, &f.log_level);
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "mkube-scheduler: %s\n", what.c_str());
  return 1;
}

// Profiles need the scheduler as their handle, and the scheduler needs the profiles: the
// handle forwards to it once it exists.
struct ForwardingHandle : mkube::scheduler::framework::Handle {
  const mkube::scheduler::Scheduler* to = nullptr;

  std::vector<mkube::api::LabelSelector> OwnerSelectors(const mkube::api::Pod& pod) const override {
    return to ? to->OwnerSelectors(pod) : std::vector<mkube::api::LabelSelector>{};
  }
  mkube::scheduler::framework::LabelMap NamespaceLabels(const std::string& name) const override {
    return to ? to->NamespaceLabels(name) : mkube::scheduler::framework::LabelMap();
  }
  std::vector<std::string> NamespacesMatching(const mkube::api::Selector& selector) const override {
    return to ? to->NamespacesMatching(selector) : std::vector<std::string>{};
  }
};

// The profiles of --config (the default profile without it); the error names the file.
absl::StatusOr<std::vector<mkube::scheduler::framework::Profile>> LoadProfiles(
    const std::string& config_file, const ForwardingHandle* handle) {
  std::string text;
  if (!config_file.empty()) {
    std::ifstream in(config_file);
    if (!in) return absl::InvalidArgumentError("cannot read --config " + config_file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  auto profiles = mkube::scheduler::framework::LoadConfig(text, handle);
  if (!profiles.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("--config {}: {}", config_file, std::string(profiles.status().message())));
  }
  return profiles;
}

// Nodes first, so that the first pods find them; then waits until both caches have synced.
void SyncCaches(Informer<mkube::api::Node>& nodes, Informer<mkube::api::Pod>& pods) {
  nodes.Start();
  nodes.WaitForCacheSync(std::chrono::seconds(30));
  pods.Start();
  if (!pods.WaitForCacheSync(std::chrono::seconds(30)) || !nodes.HasSynced()) {
    mkube::log::Logger("main").warn(
        "the caches have not synced after 30 s; scheduling starts once they have");
    while (!pods.HasSynced() || !nodes.HasSynced())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Schedules, once leading, until a termination signal comes.
int Run(const Flags& f, const mkube::client::ClientOptions& copts) {
  spdlog::logger& log = mkube::log::Logger("main");
  mkube::client::GrpcClient client(copts);
  ForwardingHandle handle;
  auto profiles = LoadProfiles(f.config_file, &handle);
  if (!profiles.ok()) return Fail(std::string(profiles.status().message()));
  std::vector<std::string> names;
  for (const auto& p : *profiles) names.push_back(p.scheduler_name);

  mkube::client::EventRecorder events(&client, "default-scheduler", "");
  mkube::scheduler::SchedulerOptions sopts;
  sopts.bind_workers = f.bind_workers;
  mkube::scheduler::Scheduler scheduler(&client, &events, std::move(*profiles), sopts);
  handle.to = &scheduler;
  Informer<mkube::api::ReplicaSet> replica_sets(&client, "replicasets");
  Informer<mkube::api::Namespace> namespaces(&client, "namespaces");
  Informer<mkube::api::Node> nodes(&client, "nodes");
  Informer<mkube::api::Pod> pods(&client, "pods");
  scheduler.SetReplicaSets(&replica_sets);
  scheduler.SetNamespaces(&namespaces);
  nodes.AddHandlers(scheduler.NodeHandlers());
  pods.AddHandlers(scheduler.PodHandlers());
  std::atomic<bool> synced{false};
  auto status = mkube::http::StartStatusServer(f.status, mkube::http::DaemonChecks(&synced));
  if (!status.ok()) return Fail(std::string(status.status().message()));
  replica_sets.Start();
  namespaces.Start();
  SyncCaches(nodes, pods);
  synced = true;

  if (auto st = mkube::daemon::WriteReadyFile(f.ready_file, f.election.identity); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  std::thread loop;
  mkube::client::Leadership leadership(copts, f.election, [&] {
    log.info("scheduling pods for profiles {}", fmt::join(names, ", "));
    mkube::http::LeaderGauge(f.election.resource_name).Set(1);
    loop = std::thread([&scheduler] { scheduler.Run(); });
  });
  log.info("mkube-scheduler {} watching apiserver {}", f.election.identity, f.apiserver.address);

  const int sig = mkube::daemon::WaitForTermination();
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

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"mkube-scheduler: assigns pods to nodes"};
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);

  if (auto st = mkube::client::Leadership::Check(flags.election); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  auto copts = flags.apiserver.Options();
  if (!copts.ok()) return Fail(std::string(copts.status().message()));
  mkube::daemon::Setup("scheduler", flags.log_level);
  return Run(flags, *copts);
}
