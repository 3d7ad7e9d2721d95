// mkube-agent: the node agent (kubelet). Registers its Node, keeps its Lease and status,
// runs the pods bound to it as process groups and serves their logs and exec.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "agent/node/node_status.h"
#include "agent/pods/pod_network.h"
#include "agent/pods/pod_workers.h"
#include "agent/runtime/container_runtime.h"
#include "agent/runtime/image.h"
#include "agent/runtime/process_runner.h"
#include "agent/runtime/sandbox.h"
#include "agent/server/agent_service.h"
#include "agent/server/port_forward.h"
#include "agent/server/serving.h"
#include "agent/simulated.h"
#include "api/labels.h"
#include "api/log.h"
#include "api/quantity.h"
#include "api/taint_spec.h"
#include "client/client.h"
#include "client/credentials.h"
#include "client/daemon.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"

namespace {

constexpr char kVersion[] = "v0.1.0";

int Fail(const std::string& what) {
  std::fprintf(stderr, "mkube-agent: %s\n", what.c_str());
  return 1;
}

void WriteReady(const std::string& file) { mkube::client::WriteReadyFile(file, "ready"); }

// --simulated: many nodes, no processes, until a signal.
int RunSimulated(mkube::client::GrpcClient* client, mkube::agent::runtime::ImageStore* images,
                 const mkube::agent::node::NodeOptions& node, int count, int zones,
                 const std::string& capacity, const std::string& ready_file, sigset_t signals) {
  mkube::agent::SimulatedOptions o;
  o.count = count;
  o.prefix = node.name;
  o.zones = zones;
  o.node = node;
  for (absl::string_view kv : absl::StrSplit(capacity, ',', absl::SkipEmpty())) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.size() != 2 || !mkube::api::Quantity::Parse(p[1]).ok()) {
      return Fail(fmt::format("--simulated-capacity: invalid \"{}\": want name=quantity",
                              std::string(kv)));
    }
    o.node.capacity[p[0]] = p[1];
  }
  mkube::client::EventRecorder events(client, "kubelet", node.name);
  mkube::agent::SimulatedNodes nodes(client, images, &events, o);
  if (auto st = nodes.Register(); !st.ok()) {
    return Fail("cannot register the simulated nodes: " + st.ToString());
  }
  nodes.Start();
  mkube::log::Logger("main").info("{} simulated nodes up ({}-0000 ... {})", count, node.name,
                                  nodes.names().back());
  WriteReady(ready_file);
  int sig = 0;
  sigwait(&signals, &sig);
  nodes.Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string apiserver = "127.0.0.1:6443", token_file, ca_file;
  bool insecure = false;
  std::string node_name = mkube::client::Hostname(), node_ip = "127.0.0.1", listen, address_file;
  std::string root_dir, registry_dir, pod_cidr = "127.1.0.0/24", agent_token_file;
  std::string node_labels, taints, log_level = "info";
  int simulated = 0, simulated_zones = 0;
  std::string simulated_capacity = "cpu=32,memory=256Gi,pods=110";

  CLI::App app{"mkube-agent: runs the pods bound to its node"};
  app.add_option("--apiserver", apiserver, "The apiserver's address")->capture_default_str();
  app.add_option("--token-file", token_file, "File with this node's bearer token")->required();
  app.add_option("--ca-file", ca_file, "CA that signed the apiserver's certificate");
  app.add_flag("--insecure-plaintext", insecure, "Talk to the apiserver without TLS");
  app.add_option("--node-name", node_name, "The Node this agent registers")->capture_default_str();
  app.add_option("--node-ip", node_ip, "The node's address (pods' hostIP)")->capture_default_str();
  app.add_option("--listen", listen, "Where to serve logs and exec (default <node-ip>:10250; port 0: any)");
  app.add_option("--address-file", address_file, "Write the bound address to this file");
  std::string ready_file;
  app.add_option("--ready-file", ready_file,
                 "Write \"ready\" to this file once the node is registered and runs its pods");
  app.add_option("--root-dir", root_dir, "The node's folder: pods, images, logs")->required();
  app.add_option("--image-registry", registry_dir, "Folder of images (<name>/<tag>/) to pull from");
  app.add_option("--pod-cidr", pod_cidr, "Pod addresses come from here")->capture_default_str();
  mkube::agent::server::ServingFlags serving_flags;
  app.add_option("--tls-cert-file", serving_flags.cert_file,
                 "This node's serving certificate (for its name and address, from the cluster "
                 "CA): the agent's port is served with TLS");
  app.add_option("--tls-private-key-file", serving_flags.key_file, "Its private key");
  app.add_option("--client-ca-file", serving_flags.client_ca_file,
                 "The CA that signed the apiserver's client certificate, required of callers");
  app.add_option("--apiserver-client-name", serving_flags.client_name,
                 "The common name of the apiserver's client certificate: the only caller")
      ->capture_default_str();
  app.add_option("--agent-token-file", agent_token_file,
                 "Without TLS (on a loopback address only): file with the token the apiserver "
                 "presents");
  app.add_option("--node-labels", node_labels, "Labels to register the node with: k=v,k2=v2");
  app.add_option("--register-with-taints", taints,
                 "Taints to register the node with: key=value:Effect,...");
  int lease_seconds = 40;
  app.add_option("--node-lease-duration-seconds", lease_seconds,
                 "The node's Lease lasts this long; it is renewed every quarter of it (the node "
                 "lifecycle controller counts a node lost after its grace period without one)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--simulated", simulated,
                 "Register this many simulated nodes instead (named <node-name>-0000, ...; "
                 "default prefix sim): pods bound to them are reported Running without "
                 "running anything")
      ->check(CLI::Range(0, 100000));
  app.add_option("--simulated-capacity", simulated_capacity,
                 "Capacity of each simulated node: cpu=..,memory=..,pods=..")
      ->capture_default_str();
  app.add_option("--simulated-zones", simulated_zones,
                 "Spread the simulated nodes over this many zones (topology.kubernetes.io/zone)")
      ->check(CLI::Range(0, 100000));
  double metrics_resolution = 5;
  app.add_option("--metrics-resolution", metrics_resolution,
                 "Seconds between samples of the CPU and memory of the node's processes "
                 "(metrics.k8s.io, mkubectl top)")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 3600.0));
  int64_t pod_max_pids = 1024;
  app.add_option("--pod-max-pids", pod_max_pids,
                 "At most this many processes in a pod (where cgroups allow; 0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{4194304}));
  std::string isolation_mode = "auto";
  app.add_option("--isolation", isolation_mode,
                 "auto: hold containers apart with all the host offers (own root filesystem, "
                 "PID namespace, users, capabilities); none: run them as the agent's processes "
                 "in the node's filesystem (for comparison; any pod can then read the node's "
                 "files)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "none"}));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  CLI11_PARSE(app, argc, argv);
  if (simulated > 0 && app.count("--node-name") == 0) node_name = "sim";
  // Debian's Abseil otherwise checks lock order on every absl::Mutex acquisition, under one
  // process-wide lock (a few percent of a busy daemon's CPU).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  mkube::log::Setup("agent " + node_name, spdlog::level::from_str(log_level));
  spdlog::logger& log = mkube::log::Logger("main");

  mkube::agent::node::NodeOptions node;
  node.name = node_name;
  node.ip = node_ip;
  node.pod_cidr = pod_cidr;
  node.version = kVersion;
  node.lease_duration_seconds = lease_seconds;
  node.renew_interval = absl::Milliseconds(lease_seconds * 1000 / 4);
  for (absl::string_view kv : absl::StrSplit(node_labels, ',', absl::SkipEmpty())) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.size() != 2 || !mkube::api::ValidateLabelKey(p[0]).ok() ||
        !mkube::api::ValidateLabelValue(p[1]).ok()) {
      return Fail(fmt::format("--node-labels: invalid label \"{}\"", std::string(kv)));
    }
    node.labels[p[0]] = p[1];
  }
  for (absl::string_view t : absl::StrSplit(taints, ',', absl::SkipEmpty())) {
    auto spec = mkube::api::ParseTaint(std::string(t));
    if (!spec.ok()) return Fail("--register-with-taints: " + std::string(spec.status().message()));
    if (spec->remove || spec->effect.empty()) {
      return Fail(fmt::format("--register-with-taints: invalid taint spec: {}", std::string(t)));
    }
    mkube::api::Taint taint;
    taint.set_key(spec->key);
    taint.set_value(spec->value);
    taint.set_effect(spec->effect);
    node.taints.push_back(taint);
  }
  auto copts = mkube::client::DaemonClientOptions(apiserver, token_file, ca_file, insecure);
  if (!copts.ok()) return Fail(std::string(copts.status().message()));
  if (listen.empty()) listen = node_ip + ":10250";
  serving_flags.listen = listen;
  serving_flags.token_file = agent_token_file;
  absl::StatusOr<mkube::agent::server::Serving> serving = mkube::agent::server::Serving{};
  // Simulated nodes serve no port.
  if (simulated == 0) serving = mkube::agent::server::ServingFromFlags(serving_flags);
  if (!serving.ok()) return Fail(std::string(serving.status().message()));
  std::error_code ec;
  std::filesystem::create_directories(root_dir, ec);
  if (ec) return Fail(fmt::format("cannot create --root-dir {}: {}", root_dir, ec.message()));
  root_dir = std::filesystem::absolute(root_dir).string();
  if (!registry_dir.empty()) registry_dir = std::filesystem::absolute(registry_dir).string();

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  mkube::client::GrpcClient client(*copts);
  mkube::agent::runtime::ImageStore images(registry_dir, root_dir + "/images");
  if (simulated > 0) {
    return RunSimulated(&client, &images, node, simulated, simulated_zones, simulated_capacity,
                        ready_file, signals);
  }
  // The agent's server first: the Node must say where it is.
  mkube::client::Informer<mkube::api::Pod> pods(
      &client, "pods", {.field_selector = "spec.nodeName=" + node_name});
  // The node's folder holds its pods' files and its token: its owner's alone.
  std::filesystem::permissions(root_dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace, ec);
  mkube::agent::runtime::HostIsolation isolation;
  if (isolation_mode == "auto") {
    isolation = mkube::agent::runtime::DetectIsolation();
    if (isolation.root) isolation.cgroups = mkube::agent::runtime::DetectCgroups(node_name);
  }
  log.info("container isolation: {}", isolation.Describe());
  for (const auto& missing : isolation.Missing()) {
    log.warn("containers are not protected here by: {}", missing);
  }
  node.annotations["mkube.io/isolation"] = isolation.Describe();
  mkube::agent::pods::PodWorkersOptions pm;
  pm.node_name = node_name;
  pm.node_ip = node_ip;
  pm.root_dir = root_dir;
  mkube::client::EventRecorder events(&client, "kubelet", node_name);
  mkube::agent::runtime::ProcessRunnerPtr runner = mkube::agent::runtime::NewProcessRunner();
  mkube::agent::runtime::ContainerRuntime runtime(
      &images, runner.get(), {.isolation = isolation, .pod_max_pids = pod_max_pids});
  mkube::agent::pods::PodNetwork network(node_ip, pod_cidr, &events);
  mkube::agent::pods::PodWorkers manager(&client, &pods, &runtime, &network, &events, pm);
  mkube::agent::server::AgentService service(&manager, &serving->auth);
  mkube::agent::node::UsageSampler usage([&manager] { return manager.RunningContainers(); },
                                         mkube::agent::node::ProcReader(),
                                         mkube::client::RealClock(), getpid());
  mkube::agent::server::StatsService stats(&usage, &serving->auth);
  mkube::agent::server::PortForwardService forward(&manager, &serving->auth);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, serving->credentials, &port);
  builder.RegisterService(&service);
  builder.RegisterService(&stats);
  builder.RegisterService(&forward);
  auto server = builder.BuildAndStart();
  if (!server || port == 0) return Fail("cannot listen on " + listen);
  node.agent_port = port;
  const std::string address = listen.substr(0, listen.rfind(':')) + ":" + std::to_string(port);

  mkube::agent::node::NodeStatusManager status(&client, &images, &events, node);
  absl::Status registered = status.Register();
  for (int i = 0; !registered.ok() && i < 60; ++i) {
    log.warn("cannot register the node yet ({}); retrying", registered.ToString());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    registered = status.Register();
  }
  if (!registered.ok()) return Fail("cannot register the node: " + registered.ToString());
  status.Start();
  pods.AddHandlers(manager.Handlers());
  pods.Start();
  if (!pods.WaitForCacheSync(std::chrono::seconds(30))) {
    log.warn("the pod cache has not synced after 30 s; pods are run once it has");
  }
  manager.Start();
  usage.Start(absl::Seconds(metrics_resolution));
  if (!address_file.empty()) {
    std::ofstream(address_file + ".tmp") << address << "\n";
    std::filesystem::rename(address_file + ".tmp", address_file);
  }
  WriteReady(ready_file);
  log.info("mkube-agent {} serving on {} ({}), apiserver {}", node_name, address,
           serving->auth.tls() ? "TLS" : "plaintext", apiserver);

  int sig = 0;
  sigwait(&signals, &sig);
  log.info("signal {}: stopping the node's pods and shutting down", sig);
  pods.Stop();
  usage.Stop();
  manager.Stop();
  status.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}
