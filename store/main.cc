// mkube-store: an etcd v3 compatible versioned key-value store on RocksDB.
#include <cstdio>
#include <filesystem>

#include "CLI/CLI.hpp"
#include "base/daemon.h"
#include "base/http/health.h"
#include "base/log.h"
#include "base/metrics.h"
#include "store/server/store_server.h"

namespace {

struct Flags {
  mkube::store::server::ServerOptions server;
  std::string log_level = "info";
  std::string address_file;
  mkube::http::StatusFlags status;
  int64_t progress_ms = 10 * 60 * 1000;
  double max_request_bytes = static_cast<double>(server.max_request_bytes);
};

void AddTlsFlags(CLI::App& app, mkube::store::server::ServerOptions& o) {
  app.add_option("--cert-file", o.tls.cert_file,
                 "Serve TLS with this certificate (PEM, chain allowed)")
      ->check(CLI::ExistingFile);
  app.add_option("--key-file", o.tls.key_file, "The certificate's private key (PEM)")
      ->check(CLI::ExistingFile);
  app.add_option("--trusted-ca-file", o.tls.trusted_ca_file,
                 "CA bundle that client certificates must chain to")
      ->check(CLI::ExistingFile);
  app.add_flag("--client-cert-auth", o.tls.client_cert_auth,
               "Require a client certificate signed by --trusted-ca-file");
}

void AddFlags(CLI::App& app, Flags& f) {
  auto& o = f.server;
  app.add_option("--data-dir", o.store.data_dir, "Folder of the database")->required();
  app.add_option("--listen", o.listen,
                 "Address to serve on (port 0: any free port; without TLS, loopback only)")
      ->capture_default_str();
  app.add_option("--max-request-bytes", f.max_request_bytes, "Largest write request accepted")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--sync", o.store.sync,
                 "Sync the WAL before acknowledging a write (false is unsafe)")
      ->capture_default_str();
  app.add_option("--name", o.name, "Member name reported by MemberList")->capture_default_str();
  app.add_option("--watch-progress-notify-interval-ms", f.progress_ms,
                 "Interval of watch progress notifications")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--io-threads", o.io_threads, "Event loops serving client connections")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--max-connections", o.max_connections,
                 "Client connections open at once; more are refused (GOAWAY ENHANCE_YOUR_CALM)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-concurrent-streams", o.max_concurrent_streams,
                 "Calls open at once on one client connection (SETTINGS_MAX_CONCURRENT_STREAMS)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 31));
  AddTlsFlags(app, o);
  app.add_option("--address-file", f.address_file, "Write the bound address to this file");
  mkube::http::AddStatusFlags(app, &f.status);
  mkube::daemon::AddLogLevelOption(app, &f.log_level);
}

// etcd's names for what it shares with mkube-store: one member, always its own leader, and the
// size of its database on disk.
void AddStoreMetrics(const std::string& data_dir) {
  auto& r = mkube::metrics::Registry::Default();
  r.AddGauge("etcd_server_has_leader", "Whether or not a leader exists. 1 is existence, 0 is not.")
      .With()
      .Set(1);
  r.AddGauge("etcd_server_is_leader", "Whether or not this member is a leader. 1 if is, 0 otherwise.")
      .With()
      .Set(1);
  r.AddCallback("etcd_mvcc_db_total_size_in_bytes",
                "Total size of the underlying database physically allocated in bytes.", "gauge",
                {}, [data_dir] {
                  std::error_code ec;
                  double bytes = 0;
                  for (const auto& e : std::filesystem::recursive_directory_iterator(data_dir, ec)) {
                    if (e.is_regular_file(ec)) bytes += static_cast<double>(e.file_size(ec));
                  }
                  return std::vector<mkube::metrics::Sample>{{{}, bytes}};
                });
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "mkube-store: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"mkube-store: a versioned key-value store speaking the etcd v3 API"};
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  flags.server.max_request_bytes = static_cast<size_t>(flags.max_request_bytes);
  flags.server.progress_interval = std::chrono::milliseconds(flags.progress_ms);
  mkube::daemon::Setup("store", flags.log_level);
  mkube::daemon::RaiseOpenFileLimit();
  spdlog::logger& log = mkube::log::Logger("main");

  auto server = mkube::store::server::StoreServer::Start(flags.server);
  if (!server.ok()) return Fail(server.status().ToString());
  AddStoreMetrics(flags.server.store.data_dir);
  mkube::http::HealthChecks checks;
  checks.live.push_back({"ping", [] { return absl::OkStatus(); }});
  auto status = mkube::http::StartStatusServer(flags.status, std::move(checks));
  if (!status.ok()) return Fail(std::string(status.status().message()));
  if (auto st = mkube::daemon::WriteReadyFile(flags.address_file, (*server)->address()); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  const int sig = mkube::daemon::WaitForTermination();
  log.info("signal {}: shutting down", sig);
  (*server)->Shutdown();
  server->reset();
  log.info("stopped");
  return 0;
}
