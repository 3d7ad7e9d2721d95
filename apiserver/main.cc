// mkube-apiserver: the API every other part of mkube talks to.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "apiserver/auth/auth.h"
#include "apiserver/cache/watch_cache.h"
#include "apiserver/registry/registry.h"
#include "apiserver/rest/encoding.h"
#include "apiserver/rest/front.h"
#include "apiserver/server/api_service.h"
#include "apiserver/server/node_images.h"
#include "apiserver/server/pod_streams.h"
#include "apiserver/storage/compactor.h"
#include "apiserver/storage/etcd_storage.h"
#include "base/daemon.h"
#include "base/http/server.h"
#include "base/metrics.h"
#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"

namespace {

using mkube::apiserver::server::AgentCredentials;

spdlog::logger& Log() {
  static spdlog::logger& logger = mkube::log::Logger("main");
  return logger;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The file a flag names, whole; empty when it cannot be read.
absl::StatusOr<std::string> ReadFlagFile(const char* flag, const std::string& path) {
  std::string text = Slurp(path);
  if (text.empty()) return absl::InvalidArgumentError(fmt::format("cannot read {} {}", flag, path));
  return text;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "mkube-apiserver: %s\n", what.c_str());
  return 1;
}

int Fail(const absl::Status& st) { return Fail(std::string(st.message())); }

// What the command line asks for.
struct Flags {
  std::string listen = "127.0.0.1:6443";
  std::string store_endpoints = "127.0.0.1:2379";
  std::string token_file, address_file, log_level = "info";
  std::string http_listen = "127.0.0.1:0", http_address_file;
  std::string tls_cert, tls_key, client_ca, agent_token_file;
  std::string agent_ca, agent_cert, agent_key;
  std::string etcd_ca, etcd_cert, etcd_key;
  bool insecure = false;
  size_t max_request_bytes = 3 << 20;
  mkube::apiserver::server::ServiceOptions service_options;
  int watch_coalesce_ms = static_cast<int>(service_options.watch_coalesce.count());
  std::string compaction_interval = "5m";
  mkube::apiserver::registry::RegistryOptions registry_options;
  size_t window_mib = 128;
};

// Where the server listens, and where its store is.
void AddEndpointFlags(CLI::App& app, Flags& f) {
  app.add_option("--listen", f.listen, "Address to serve on (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--store-endpoints", f.store_endpoints,
                 "Comma-separated etcd v3 endpoints (mkube-store or an etcd cluster); "
                 "https://host:port for TLS")
      ->capture_default_str();
  app.add_option("--etcd-cafile", f.etcd_ca, "CA that the store's certificate must chain to (TLS)")
      ->check(CLI::ExistingFile);
  app.add_option("--etcd-certfile", f.etcd_cert, "Client certificate presented to the store (TLS)")
      ->check(CLI::ExistingFile);
  app.add_option("--etcd-keyfile", f.etcd_key, "The client certificate's key")
      ->check(CLI::ExistingFile);
}

// Who its callers are, and how it proves itself to them and to node agents.
void AddCredentialFlags(CLI::App& app, Flags& f) {
  app.add_option("--token-file", f.token_file, "Static bearer tokens: token,user,uid,\"groups\"")
      ->required();
  app.add_option("--tls-cert-file", f.tls_cert, "Serving certificate (PEM)");
  app.add_option("--tls-private-key-file", f.tls_key, "Serving key (PEM)");
  app.add_option("--client-ca-file", f.client_ca, "CA for client certificates (optional)");
  app.add_option("--agent-client-certificate", f.agent_cert,
                 "Client certificate presented to node agents, for pods' logs, exec, "
                 "port-forward and the nodes' stats (PEM; CN mkube-apiserver-agent-client)");
  app.add_option("--agent-client-key", f.agent_key, "Its key (PEM)");
  app.add_option("--agent-certificate-authority", f.agent_ca,
                 "CA that signed the agents' serving certificates; an agent must present one "
                 "for its node's name");
  app.add_option("--agent-token-file", f.agent_token_file,
                 "Without the above: file with the token presented to node agents on loopback "
                 "addresses (and to no others)");
  app.add_flag("--insecure-plaintext", f.insecure, "Serve without TLS (only when asked for)");
}

// The requests it takes, and the defaults it gives pods.
void AddRequestFlags(CLI::App& app, Flags& f) {
  app.add_option("--max-request-bytes", f.max_request_bytes,
                 "Largest request accepted (Kubernetes' limit on a request's body); larger ones "
                 "are refused by gRPC, which clients word as Kubernetes does: \"Request entity "
                 "too large: limit is N\"")
      ->capture_default_str();
  app.add_option("--store-max-request-bytes", f.service_options.store_max_request_bytes,
                 "The store's --max-request-bytes: a write it would refuse for its size is "
                 "refused before it is sent, as etcd words it (\"etcdserver: request is too "
                 "large\")")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-waiting-requests", f.service_options.max_waiting_requests,
                 "Requests that may wait for a worker (and, besides, writes that may wait for "
                 "the store); more are refused at once with RESOURCE_EXHAUSTED (HTTP 429), as "
                 "by Kubernetes' --max-requests-inflight")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--default-not-ready-toleration-seconds",
                 f.registry_options.default_not_ready_toleration_seconds,
                 "The tolerationSeconds of the not-ready:NoExecute toleration every pod gets "
                 "unless it has one")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--default-unreachable-toleration-seconds",
                 f.registry_options.default_unreachable_toleration_seconds,
                 "The tolerationSeconds of the unreachable:NoExecute toleration every pod gets "
                 "unless it has one")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

// The flags of watches, compaction and the process.
void AddWatchAndProcessFlags(CLI::App& app, Flags& f) {
  app.add_option("--watch-queue-events", f.service_options.watch_queue,
                 "Events one watch may have waiting before it is closed as too slow")
      ->capture_default_str();
  app.add_option("--watch-cache-window-mib", f.window_mib,
                 "Recent events the watch cache keeps for resuming watches, by size of their "
                 "objects (older resourceVersions get \"too old\")")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--watch-coalesce-ms", f.watch_coalesce_ms,
                 "Once a watch thread has sent 32 events (per watch) within this many ms, its "
                 "watches wait for the rest of it and send their waiting events together (0: "
                 "send each write as soon as the last is done); the same for the HTTP API's "
                 "watches, counted per write")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--watch-threads", f.service_options.watch_threads,
                 "Threads that serve watches (each watch is served by one)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--etcd-compaction-interval", f.compaction_interval,
                 "How often to compact the store's history, keeping about one interval of it "
                 "(a duration such as 5m or 30s; 0 never compacts)")
      ->capture_default_str();
  app.add_option("--address-file", f.address_file, "Write the bound address to this file");
  app.add_option("--http-listen", f.http_listen,
                 "Address of the Kubernetes HTTP API (HTTPS with the serving certificate), which "
                 "also serves /healthz, /livez, /readyz and /metrics (port 0: any free port; "
                 "empty: not served)")
      ->capture_default_str();
  app.add_option("--http-address-file", f.http_address_file,
                 "Write the Kubernetes API's bound address to this file");
  mkube::daemon::AddLogLevelOption(app, &f.log_level);
}

absl::StatusOr<absl::Duration> CompactionInterval(const Flags& f) {
  absl::Duration compaction;
  if (!absl::ParseDuration(f.compaction_interval, &compaction) ||
      compaction < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--etcd-compaction-interval: " + f.compaction_interval +
                                      " is not a duration (such as 5m, 30s or 0)");
  }
  return compaction;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServingCredentials(const Flags& f) {
  if (!f.tls_cert.empty() || !f.tls_key.empty()) {
    if (f.tls_cert.empty() || f.tls_key.empty()) {
      return absl::InvalidArgumentError("--tls-cert-file and --tls-private-key-file go together");
    }
    grpc::SslServerCredentialsOptions ssl(
        f.client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_key_cert_pairs.push_back({Slurp(f.tls_key), Slurp(f.tls_cert)});
    if (!f.client_ca.empty()) ssl.pem_root_certs = Slurp(f.client_ca);
    return grpc::SslServerCredentials(ssl);
  }
  if (f.insecure) return grpc::InsecureServerCredentials();
  return absl::InvalidArgumentError(
      "no TLS certificate given: pass --tls-cert-file and --tls-private-key-file, "
      "or --insecure-plaintext to serve without TLS");
}

// How the apiserver proves itself to node agents: a client certificate, a token, or nothing.
absl::StatusOr<AgentCredentials> AgentCredentialsOf(const Flags& f) {
  AgentCredentials agent_credentials;
  if (!f.agent_cert.empty() || !f.agent_key.empty() || !f.agent_ca.empty()) {
    if (f.agent_cert.empty() || f.agent_key.empty() || f.agent_ca.empty()) {
      return absl::InvalidArgumentError(
          "--agent-client-certificate, --agent-client-key and --agent-certificate-authority "
          "go together");
    }
    for (auto [flag, path, pem] :
         {std::tuple{"--agent-client-certificate", &f.agent_cert, &agent_credentials.cert_pem},
          std::tuple{"--agent-client-key", &f.agent_key, &agent_credentials.key_pem},
          std::tuple{"--agent-certificate-authority", &f.agent_ca, &agent_credentials.ca_pem}}) {
      MKUBE_ASSIGN_OR_RETURN(auto text, ReadFlagFile(flag, *path));
      *pem = std::move(text);
    }
  } else if (!f.agent_token_file.empty()) {
    MKUBE_ASSIGN_OR_RETURN(auto text, ReadFlagFile("--agent-token-file", f.agent_token_file));
    agent_credentials.token = std::string(absl::StripTrailingAsciiWhitespace(text));
    if (agent_credentials.token.empty()) {
      return absl::InvalidArgumentError("--agent-token-file " + f.agent_token_file + " is empty");
    }
  }
  return agent_credentials;
}

absl::StatusOr<mkube::apiserver::storage::StoreTls> StoreTlsOf(const Flags& f) {
  mkube::apiserver::storage::StoreTls store_tls;
  store_tls.enabled = !f.etcd_ca.empty() || !f.etcd_cert.empty() ||
                      absl::StrContains(f.store_endpoints, "https://");
  if (f.etcd_cert.empty() != f.etcd_key.empty()) {
    return absl::InvalidArgumentError("--etcd-certfile and --etcd-keyfile go together");
  }
  if (store_tls.enabled) {
    store_tls.ca_pem = f.etcd_ca.empty() ? "" : Slurp(f.etcd_ca);
    store_tls.cert_pem = f.etcd_cert.empty() ? "" : Slurp(f.etcd_cert);
    store_tls.key_pem = f.etcd_key.empty() ? "" : Slurp(f.etcd_key);
  }
  return store_tls;
}

// Starts the watch cache, waiting up to 30 s for the store to answer.
absl::Status StartCache(mkube::apiserver::cache::WatchCache& cache) {
  absl::Status started = cache.Start();
  for (int i = 0; !started.ok() && i < 60; ++i) {
    Log().warn("store not ready ({}); retrying", started.ToString());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    started = cache.Start();
  }
  return started;
}

// The gRPC server of the API and of `more` (the pods' streams, image loads), started; null if
// it cannot listen.
std::unique_ptr<grpc::Server> StartServer(const Flags& f,
                                          std::shared_ptr<grpc::ServerCredentials> creds,
                                          mkube::apiserver::server::ApiService& service,
                                          std::vector<grpc::Service*> more, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(f.listen, std::move(creds), port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(f.max_request_bytes));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  service.Register(&builder);
  for (grpc::Service* s : more) builder.RegisterService(s);
  return builder.BuildAndStart();
}

// The Kubernetes HTTP API, started (null when not asked for).
absl::StatusOr<std::unique_ptr<mkube::http::Server>> StartKubeApi(
    const Flags& f, mkube::apiserver::rest::Front& front) {
  if (f.http_listen.empty()) return nullptr;
  mkube::http::ServerOptions o;
  o.listen = f.http_listen;
  o.tls_cert_file = f.tls_cert;
  o.tls_key_file = f.tls_key;
  o.client_ca_file = f.client_ca;
  o.max_body_bytes = std::min<size_t>(f.max_request_bytes, 3 << 20);
  o.coalesce = std::chrono::milliseconds(f.watch_coalesce_ms);
  o.error_response = [](int code, const std::string& message) {
    return mkube::apiserver::rest::Refusal(code, code == 413 ? "RequestEntityTooLarge" : "BadRequest",
                                           message);
  };
  auto server = std::make_unique<mkube::http::Server>(
      o, [&front](mkube::http::Request req, mkube::http::ExchangePtr ex) {
        front.Handle(std::move(req), std::move(ex));
      });
  MKUBE_RETURN_IF_ERROR(server->Start());
  if (auto st = mkube::daemon::WriteReadyFile(f.http_address_file, server->address()); !st.ok()) {
    Log().error("{}", std::string(st.message()));
  }
  Log().info("Kubernetes API on {}://{}", server->tls() ? "https" : "http", server->address());
  return server;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"mkube-apiserver: the mkube API over gRPC"};
  AddEndpointFlags(app, flags);
  AddCredentialFlags(app, flags);
  AddRequestFlags(app, flags);
  AddWatchAndProcessFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  mkube::daemon::Setup("apiserver", flags.log_level);
  auto compaction = CompactionInterval(flags);
  if (!compaction.ok()) return Fail(compaction.status());
  auto creds = ServingCredentials(flags);
  if (!creds.ok()) return Fail(creds.status());
  auto authn = mkube::apiserver::auth::TokenAuthenticator::FromFile(flags.token_file);
  if (!authn.ok()) return Fail(authn.status().ToString());
  auto agent_credentials = AgentCredentialsOf(flags);
  if (!agent_credentials.ok()) return Fail(agent_credentials.status());

  auto store_tls = StoreTlsOf(flags);
  if (!store_tls.ok()) return Fail(store_tls.status());
  mkube::apiserver::storage::EtcdStorage store(flags.store_endpoints, *store_tls);
  mkube::apiserver::cache::CacheOptions cache_options;
  cache_options.window_bytes = flags.window_mib << 20;
  mkube::apiserver::cache::WatchCache cache(&store, cache_options);
  if (auto st = StartCache(cache); !st.ok()) {
    return Fail("cannot reach the store: " + st.ToString());
  }
  mkube::apiserver::registry::Registry registry(&store, &cache, flags.registry_options);
  if (auto st = registry.Bootstrap(); !st.ok()) return Fail(st.ToString());
  flags.service_options.watch_coalesce = std::chrono::milliseconds(flags.watch_coalesce_ms);
  mkube::apiserver::server::Agents agents(*std::move(agent_credentials));
  mkube::apiserver::server::MetricsApi metrics(&registry, &agents);
  mkube::apiserver::server::ApiService service(&registry, &*authn, flags.service_options, &metrics);
  mkube::apiserver::server::Gate gate(&registry, &*authn);
  mkube::apiserver::server::PodTargets pod_targets(&registry, &gate, &agents);
  mkube::apiserver::server::PodStreamsService streams(&pod_targets, &*authn);
  mkube::apiserver::server::PodPortForwardService port_forward(&streams);

  int port = 0;
  mkube::apiserver::server::NodeImagesService node_images(&registry, &gate, &agents);
  auto server =
      StartServer(flags, *creds, service, {&streams, &port_forward, &node_images}, &port);
  if (!server || port == 0) return Fail("cannot listen on " + flags.listen);
  service.StartWatches();
  mkube::apiserver::server::SizedWrites writes(&registry,
                                               flags.service_options.store_max_request_bytes);
  mkube::http::HealthChecks health;
  health.live.push_back({"ping", [] { return absl::OkStatus(); }});
  health.ready.push_back({"etcd", [&registry] {
                            return registry.GetAs<mkube::api::Namespace>("namespaces", "", "default")
                                .status();
                          }});
  mkube::apiserver::rest::Front front(&registry, &gate, &writes, &metrics, &pod_targets,
                                      std::move(health), &mkube::metrics::Registry::Default());
  auto kube_api = StartKubeApi(flags, front);
  if (!kube_api.ok()) return Fail(kube_api.status());
  mkube::apiserver::storage::Compactor compactor(
      &store, std::chrono::milliseconds(absl::ToInt64Milliseconds(*compaction)));
  if (*compaction > absl::ZeroDuration()) compactor.Start();
  const std::string address =
      flags.listen.substr(0, flags.listen.rfind(':')) + ":" + std::to_string(port);
  if (auto st = mkube::daemon::WriteReadyFile(flags.address_file, address); !st.ok()) {
    Log().error("{}", std::string(st.message()));
  }
  Log().info("mkube-apiserver serving on {} ({}), store {}", address,
             flags.insecure && flags.tls_cert.empty() ? "plaintext" : "TLS", flags.store_endpoints);
  const int sig = mkube::daemon::WaitForTermination();
  Log().info("signal {}: shutting down", sig);
  compactor.Stop();
  if (*kube_api) (*kube_api)->Stop();
  front.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  cache.Stop();
  return 0;
}
