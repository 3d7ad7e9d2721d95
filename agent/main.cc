// mkube-agent: the node agent (kubelet). Registers its Node, keeps its Lease and status,
// runs the pods bound to it as process groups and serves their logs and exec.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "agent/node/node_status.h"
#include "agent/node/usage.h"
#include "agent/pods/pod_network.h"
#include "agent/pods/pod_workers.h"
#include "agent/runtime/container_runtime.h"
#include "agent/runtime/image.h"
#include "agent/runtime/image_gc.h"
#include "agent/runtime/process_runner.h"
#include "agent/runtime/sandbox.h"
#include "agent/server/agent_service.h"
#include "agent/server/images_service.h"
#include "agent/server/port_forward.h"
#include "agent/server/serving.h"
#include "agent/simulated.h"
#include "api/labels.h"
#include "api/quantity.h"
#include "api/taint_spec.h"
#include "base/daemon.h"
#include "base/http/health.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/client.h"
#include "client/credentials.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"

namespace {

namespace agent = mkube::agent;
namespace client = mkube::client;
namespace metrics = mkube::metrics;

constexpr char kVersion[] = "v0.1.0";

struct Flags {
  client::ApiserverFlags apiserver;
  std::string node_name = mkube::daemon::Hostname(), node_ip = "127.0.0.1", listen, address_file;
  std::string ready_file;
  mkube::http::StatusFlags status;
  std::string root_dir, pod_cidr = "127.1.0.0/24", agent_token_file;
  std::vector<std::string> insecure_registries;
  std::string registry_credentials;  // empty: <root-dir>/config.json
  std::vector<std::string> image_archives;
  agent::runtime::ImageGcPolicy image_gc;
  std::string image_min_age = "2m", image_max_age = "0s", image_gc_period = "5m";
  agent::server::ServingFlags serving;
  std::string node_labels, taints, log_level = "info";
  int lease_seconds = 40;
  int simulated = 0, simulated_zones = 0;
  std::string simulated_capacity = "cpu=32,memory=256Gi,pods=110";
  double metrics_resolution = 5;
  int64_t pod_max_pids = 1024;
  std::string isolation = "auto";
};

// Who the node is, where it keeps its files, how it reaches the apiserver and serves its port.
void AddNodeFlags(CLI::App* app, Flags* f) {
  f->apiserver.Register(*app, "this node's");
  app->add_option("--node-name", f->node_name, "The Node this agent registers")
      ->capture_default_str();
  app->add_option("--node-ip", f->node_ip, "The node's address (pods' hostIP)")
      ->capture_default_str();
  app->add_option("--listen", f->listen,
                  "Where to serve logs and exec (default <node-ip>:10250; port 0: any)");
  app->add_option("--address-file", f->address_file, "Write the bound address to this file");
  mkube::http::AddStatusFlags(*app, &f->status);
  app->add_option("--ready-file", f->ready_file,
                  "Write \"ready\" to this file once the node is registered and runs its pods");
  app->add_option("--root-dir", f->root_dir, "The node's folder: pods, images, logs")->required();
  app->add_option("--image-archive", f->image_archives,
                  "Images the node holds from the start (a docker save archive or an OCI image "
                  "layout tarball): their names are pulled from here, as from a registry that "
                  "holds them; repeatable");
  app->add_option("--registry-credentials", f->registry_credentials,
                  "Registry credentials as `docker login` writes them ({\"auths\": {\"HOST:PORT\": "
                  "{\"auth\": base64(user:password)}}}), read again when it changes (default: "
                  "<root-dir>/config.json, as the kubelet's)");
  app->add_option("--image-gc-high-threshold", f->image_gc.high_threshold_percent,
                  "The percent of disk usage at which unused images are removed (100: never)")
      ->capture_default_str();
  app->add_option("--image-gc-low-threshold", f->image_gc.low_threshold_percent,
                  "The percent of disk usage image garbage collection brings usage down to")
      ->capture_default_str();
  app->add_option("--minimum-image-ttl-duration", f->image_min_age,
                  "The minimum age of an unused image before it may be removed")
      ->capture_default_str();
  app->add_option("--image-maximum-gc-age", f->image_max_age,
                  "Unused images are removed after this long, whatever the disk usage (0s: never)")
      ->capture_default_str();
  app->add_option("--image-gc-period", f->image_gc_period,
                  "How often image garbage collection looks at the disk")
      ->capture_default_str();
  app->add_option("--insecure-registry", f->insecure_registries,
                  "A registry (HOST:PORT) spoken to in plain HTTP rather than HTTPS; repeatable");
  app->add_option("--pod-cidr", f->pod_cidr, "Pod addresses come from here")->capture_default_str();
  app->add_option("--tls-cert-file", f->serving.cert_file,
                  "This node's serving certificate (for its name and address, from the cluster "
                  "CA): the agent's port is served with TLS");
  app->add_option("--tls-private-key-file", f->serving.key_file, "Its private key");
  app->add_option("--client-ca-file", f->serving.client_ca_file,
                  "The CA that signed the apiserver's client certificate, required of callers");
  app->add_option("--apiserver-client-name", f->serving.client_name,
                  "The common name of the apiserver's client certificate: the only caller")
      ->capture_default_str();
  app->add_option("--agent-token-file", f->agent_token_file,
                  "Without TLS (on a loopback address only): file with the token the apiserver "
                  "presents");
}

// How the node registers and runs its pods (or registers simulated nodes instead).
void AddRunFlags(CLI::App* app, Flags* f) {
  app->add_option("--node-labels", f->node_labels, "Labels to register the node with: k=v,k2=v2");
  app->add_option("--register-with-taints", f->taints,
                  "Taints to register the node with: key=value:Effect,...");
  app->add_option("--node-lease-duration-seconds", f->lease_seconds,
                  "The node's Lease lasts this long; it is renewed every quarter of it (the node "
                  "lifecycle controller counts a node lost after its grace period without one)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app->add_option("--simulated", f->simulated,
                  "Register this many simulated nodes instead (named <node-name>-0000, ...; "
                  "default prefix sim): pods bound to them are reported Running without "
                  "running anything")
      ->check(CLI::Range(0, 100000));
  app->add_option("--simulated-capacity", f->simulated_capacity,
                  "Capacity of each simulated node: cpu=..,memory=..,pods=..")
      ->capture_default_str();
  app->add_option("--simulated-zones", f->simulated_zones,
                  "Spread the simulated nodes over this many zones (topology.kubernetes.io/zone)")
      ->check(CLI::Range(0, 100000));
  app->add_option("--metrics-resolution", f->metrics_resolution,
                  "Seconds between samples of the CPU and memory of the node's processes "
                  "(metrics.k8s.io, mkubectl top)")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 3600.0));
  app->add_option("--pod-max-pids", f->pod_max_pids,
                  "At most this many processes in a pod (where cgroups allow; 0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{4194304}));
  app->add_option("--isolation", f->isolation,
                  "auto: hold containers apart with all the host offers (own root filesystem, "
                  "PID namespace, users, capabilities); none: run them as the agent's processes "
                  "in the node's filesystem (for comparison; any pod can then read the node's "
                  "files)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "none"}));
  mkube::daemon::AddLogLevelOption(*app, &f->log_level);
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "mkube-agent: %s\n", what.c_str());
  return 1;
}

// The address and ready files a supervisor waits for: one that cannot be written is said.
void WriteReadyFile(const std::string& file, const std::string& content) {
  if (auto st = mkube::daemon::WriteReadyFile(file, content); !st.ok()) {
    mkube::log::Logger("main").error("{}", std::string(st.message()));
  }
}

// The Node to register: its name, address, lease, labels and taints.
absl::StatusOr<agent::node::NodeOptions> NodeFromFlags(const Flags& f) {
  agent::node::NodeOptions node;
  node.name = f.node_name;
  node.ip = f.node_ip;
  node.pod_cidr = f.pod_cidr;
  node.version = kVersion;
  node.lease_duration_seconds = f.lease_seconds;
  node.renew_interval = absl::Milliseconds(f.lease_seconds * 1000 / 4);
  for (absl::string_view kv : absl::StrSplit(f.node_labels, ',', absl::SkipEmpty())) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.size() != 2 || !mkube::api::ValidateLabelKey(p[0]).ok() ||
        !mkube::api::ValidateLabelValue(p[1]).ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--node-labels: invalid label \"{}\"", std::string(kv)));
    }
    node.labels[p[0]] = p[1];
  }
  for (absl::string_view t : absl::StrSplit(f.taints, ',', absl::SkipEmpty())) {
    auto spec = mkube::api::ParseTaint(std::string(t));
    if (!spec.ok()) {
      return absl::InvalidArgumentError("--register-with-taints: " +
                                        std::string(spec.status().message()));
    }
    if (spec->remove || spec->effect.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("--register-with-taints: invalid taint spec: {}", std::string(t)));
    }
    mkube::api::Taint taint;
    taint.set_key(spec->key);
    taint.set_value(spec->value);
    taint.set_effect(spec->effect);
    node.taints.push_back(taint);
  }
  return node;
}

// --root-dir made (and absolute).
absl::Status PrepareFolders(Flags* f) {
  std::error_code ec;
  std::filesystem::create_directories(f->root_dir, ec);
  if (ec) {
    return absl::InternalError(
        fmt::format("cannot create --root-dir {}: {}", f->root_dir, ec.message()));
  }
  f->root_dir = std::filesystem::absolute(f->root_dir).string();
  return absl::OkStatus();
}

// --simulated: many nodes, no processes, until a signal.
int RunSimulated(client::GrpcClient* client, agent::runtime::ImageStore* images,
                 const agent::node::NodeOptions& node, const Flags& f) {
  agent::SimulatedOptions o;
  o.count = f.simulated;
  o.prefix = node.name;
  o.zones = f.simulated_zones;
  o.node = node;
  for (absl::string_view kv : absl::StrSplit(f.simulated_capacity, ',', absl::SkipEmpty())) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.size() != 2 || !mkube::api::Quantity::Parse(p[1]).ok()) {
      return Fail(
          fmt::format("--simulated-capacity: invalid \"{}\": want name=quantity", std::string(kv)));
    }
    o.node.capacity[p[0]] = p[1];
  }
  client::EventRecorder events(client, "kubelet", node.name);
  agent::SimulatedNodes nodes(client, images, &events, o);
  if (auto st = nodes.Register(); !st.ok()) {
    return Fail("cannot register the simulated nodes: " + st.ToString());
  }
  nodes.Start();
  mkube::log::Logger("main").info("{} simulated nodes up ({}-0000 ... {})", f.simulated, node.name,
                                  nodes.names().back());
  WriteReadyFile(f.ready_file, "ready");
  mkube::daemon::WaitForTermination();
  nodes.Stop();
  return 0;
}

// What the host lets containers be held apart with (--isolation auto), said in the log and
// in the Node's annotation.
agent::runtime::HostIsolation HostIsolationFromFlags(const Flags& f,
                                                     agent::node::NodeOptions* node) {
  spdlog::logger& log = mkube::log::Logger("main");
  agent::runtime::HostIsolation isolation;
  if (f.isolation == "auto") {
    isolation = agent::runtime::DetectIsolation();
    if (isolation.root) isolation.cgroups = agent::runtime::DetectCgroups(f.node_name);
  }
  log.info("container isolation: {}", isolation.Describe());
  for (const auto& missing : isolation.Missing()) {
    log.warn("containers are not protected here by: {}", missing);
  }
  node->annotations["mkube.io/isolation"] = isolation.Describe();
  return isolation;
}

// The parts that run a real node's pods and serve its port, wired together.
struct NodeParts {
  NodeParts(const Flags& f, client::GrpcClient* client, agent::runtime::ImageStore* images,
            const agent::runtime::HostIsolation& isolation,
            const agent::server::ApiserverAuth* auth)
      : pods(client, "pods", {.field_selector = "spec.nodeName=" + f.node_name}),
        events(client, "kubelet", f.node_name),
        runner(agent::runtime::NewProcessRunner()),
        runtime(images, runner.get(), {.isolation = isolation, .pod_max_pids = f.pod_max_pids}),
        network(f.node_ip, f.pod_cidr, &events),
        workers(client, &pods, &runtime, &network, &events,
                {.node_name = f.node_name, .node_ip = f.node_ip, .root_dir = f.root_dir}),
        service(&workers, auth),
        usage([this] { return workers.RunningContainers(); }, agent::node::ProcReader(),
              client::RealClock(), getpid()),
        stats(&usage, auth),
        forward(&workers, auth),
        image_loads(images, auth) {}

  client::Informer<mkube::api::Pod> pods;
  client::EventRecorder events;
  agent::runtime::ProcessRunnerPtr runner;
  agent::runtime::ContainerRuntime runtime;
  agent::pods::PodNetwork network;
  agent::pods::PodWorkers workers;
  agent::server::AgentService service;
  agent::node::UsageSampler usage;
  agent::server::StatsService stats;
  agent::server::PortForwardService forward;
  agent::server::ImagesService image_loads;
};

// The agent's port, serving the agent's services; `port` is the one bound.
std::unique_ptr<grpc::Server> StartServer(const std::string& listen,
                                          const agent::server::Serving& serving, NodeParts* parts,
                                          int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, serving.credentials, port);
  builder.RegisterService(&parts->service);
  builder.RegisterService(&parts->stats);
  builder.RegisterService(&parts->forward);
  builder.RegisterService(&parts->image_loads);
  return builder.BuildAndStart();
}

// Registers the Node, trying again for half a minute while the apiserver is not there yet.
absl::Status RegisterNode(agent::node::NodeStatusManager* status) {
  absl::Status registered = status->Register();
  for (int i = 0; !registered.ok() && i < 60; ++i) {
    mkube::log::Logger("main").warn("cannot register the node yet ({}); retrying",
                                    registered.ToString());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    registered = status->Register();
  }
  return registered;
}

// kubelet_running_pods and kubelet_running_containers, read from `workers` at each scrape.
void CountRunning(agent::pods::PodWorkers* workers) {
  auto& r = metrics::Registry::Default();
  r.AddCallback("kubelet_running_pods", "Number of pods that have a running pod sandbox", "gauge",
                {}, [workers] {
                  std::set<std::string> pods;
                  for (const auto& c : workers->RunningContainers()) pods.insert(c.uid);
                  return std::vector<metrics::Sample>{{{}, static_cast<double>(pods.size())}};
                });
  r.AddCallback("kubelet_running_containers", "Number of containers currently running", "gauge",
                {"container_state"}, [workers] {
                  return std::vector<metrics::Sample>{
                      {{"running"}, static_cast<double>(workers->RunningContainers().size())}};
                });
}

// The image garbage collector's durations, then the whole policy checked.
absl::Status ImageGcFromFlags(Flags* f) {
  for (auto [text, out, flag] :
       {std::tuple{&f->image_min_age, &f->image_gc.min_age, "--minimum-image-ttl-duration"},
        std::tuple{&f->image_max_age, &f->image_gc.max_age, "--image-maximum-gc-age"},
        std::tuple{&f->image_gc_period, &f->image_gc.period, "--image-gc-period"}}) {
    if (!absl::ParseDuration(*text, out)) {
      return absl::InvalidArgumentError(
          fmt::format("{} must be a duration such as 2m or 30s, not \"{}\"", flag, *text));
    }
  }
  return agent::runtime::Validate(f->image_gc);
}

// A real node: its pods run here, until a signal.
int RunNode(const Flags& f, client::GrpcClient* client, agent::runtime::ImageStore* images,
            agent::node::NodeOptions node, const agent::server::Serving& serving,
            const agent::runtime::HostIsolation& isolation) {
  spdlog::logger& log = mkube::log::Logger("main");
  // The node's folder holds its pods' files and its token: its owner's alone.
  std::error_code ec;
  std::filesystem::permissions(f.root_dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace, ec);
  NodeParts parts(f, client, images, isolation, &serving.auth);
  // The agent's server first: the Node must say where it is.
  int port = 0;
  auto server = StartServer(f.listen, serving, &parts, &port);
  if (!server || port == 0) return Fail("cannot listen on " + f.listen);
  node.agent_port = port;
  const std::string address = f.listen.substr(0, f.listen.rfind(':')) + ":" + std::to_string(port);

  agent::node::NodeStatusManager status(client, images, &parts.events, node);
  mkube::api::Node node_ref;  // what the image garbage collector's events are about
  node_ref.mutable_metadata()->set_name(f.node_name);
  node_ref.mutable_metadata()->set_uid(f.node_name);
  agent::runtime::ImageGc image_gc(
      images, [&parts] { return parts.workers.ImagesInUse(); },
      agent::runtime::FilesystemOf(f.root_dir), client::RealClock(), f.image_gc,
      [&parts, &node_ref](const std::string& reason, const std::string& message) {
        parts.events.Record(node_ref, "Warning", reason, message);
      });
  if (auto st = RegisterNode(&status); !st.ok()) {
    return Fail("cannot register the node: " + st.ToString());
  }
  status.Start();
  parts.pods.AddHandlers(parts.workers.Handlers());
  parts.pods.Start();
  if (!parts.pods.WaitForCacheSync(std::chrono::seconds(30))) {
    log.warn("the pod cache has not synced after 30 s; pods are run once it has");
  }
  parts.workers.Start();
  parts.usage.Start(absl::Seconds(f.metrics_resolution));
  std::atomic<bool> synced{true};
  CountRunning(&parts.workers);
  auto status_server = mkube::http::StartStatusServer(f.status, mkube::http::DaemonChecks(&synced));
  if (!status_server.ok()) return Fail(std::string(status_server.status().message()));
  std::thread image_gc_thread([&image_gc] { image_gc.Run(); });
  WriteReadyFile(f.address_file, address);
  WriteReadyFile(f.ready_file, "ready");
  log.info("mkube-agent {} serving on {} ({}), apiserver {}", f.node_name, address,
           serving.auth.tls() ? "TLS" : "plaintext", f.apiserver.address);

  const int sig = mkube::daemon::WaitForTermination();
  log.info("signal {}: stopping the node's pods and shutting down", sig);
  image_gc.Stop();
  image_gc_thread.join();
  parts.pods.Stop();
  parts.usage.Stop();
  parts.workers.Stop();
  status.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"mkube-agent: runs the pods bound to its node"};
  AddNodeFlags(&app, &f);
  AddRunFlags(&app, &f);
  CLI11_PARSE(app, argc, argv);
  if (f.simulated > 0 && app.count("--node-name") == 0) f.node_name = "sim";
  mkube::daemon::Setup("agent " + f.node_name, f.log_level);

  auto node = NodeFromFlags(f);
  if (!node.ok()) return Fail(std::string(node.status().message()));
  auto copts = f.apiserver.Options();
  if (!copts.ok()) return Fail(std::string(copts.status().message()));
  if (f.listen.empty()) f.listen = f.node_ip + ":10250";
  f.serving.listen = f.listen;
  f.serving.token_file = f.agent_token_file;
  absl::StatusOr<agent::server::Serving> serving = agent::server::Serving{};
  // Simulated nodes serve no port.
  if (f.simulated == 0) serving = agent::server::ServingFromFlags(f.serving);
  if (!serving.ok()) return Fail(std::string(serving.status().message()));
  if (auto st = PrepareFolders(&f); !st.ok()) return Fail(std::string(st.message()));
  if (auto st = ImageGcFromFlags(&f); !st.ok()) return Fail(std::string(st.message()));

  client::GrpcClient client(*copts);
  agent::runtime::HostIsolation isolation;
  if (f.simulated == 0) isolation = HostIsolationFromFlags(f, &*node);
  // Containers' roots stack the layers' own folders where overlayfs can.
  agent::runtime::OciOptions oci{.dir = f.root_dir + "/oci", .layered = isolation.overlay};
  oci.registry.insecure.insert(f.insecure_registries.begin(), f.insecure_registries.end());
  auto credentials = std::make_shared<agent::image::CredentialsFile>(
      f.registry_credentials.empty() ? f.root_dir + "/config.json" : f.registry_credentials);
  oci.registry.credentials = [credentials](const std::string& registry) {
    return credentials->For(registry);
  };
  agent::runtime::ImageStore images(std::move(oci));
  for (const auto& archive : f.image_archives) {
    if (auto st = images.ServeArchive(archive); !st.ok()) {
      return Fail(fmt::format("--image-archive {}: {}", archive, std::string(st.message())));
    }
  }
  if (f.simulated > 0) return RunSimulated(&client, &images, *node, f);
  return RunNode(f, &client, &images, *std::move(node), *serving, isolation);
}
