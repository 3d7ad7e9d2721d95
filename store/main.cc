// mkube-store: an etcd v3 compatible versioned key-value store on RocksDB.
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "api/log.h"
#include "store/server/store_server.h"

namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = mkube::log::Logger("main");
  return logger;
}

bool WriteAddressFile(const std::string& path, const std::string& address) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << address << "\n";
    if (!out.flush()) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

// As Go programs do (etcd among them): the soft limit on open files up to the hard one, so
// that connections and RocksDB's files are not refused at the 1,024 most shells start with.
void RaiseOpenFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  const rlim_t before = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) == 0) {
    Log().debug("open files: soft limit raised from {} to {}", before, lim.rlim_cur);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using mkube::store::server::ServerOptions;
  ServerOptions options;
  std::string log_level = "info";
  std::string address_file;
  int64_t progress_ms = 10 * 60 * 1000;
  double max_request_bytes = static_cast<double>(options.max_request_bytes);

  CLI::App app{"mkube-store: a versioned key-value store speaking the etcd v3 API"};
  app.add_option("--data-dir", options.store.data_dir, "Folder of the database")->required();
  app.add_option("--listen", options.listen,
                 "Address to serve on (port 0: any free port; without TLS, loopback only)")
      ->capture_default_str();
  app.add_option("--max-request-bytes", max_request_bytes, "Largest write request accepted")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--sync", options.store.sync,
                 "Sync the WAL before acknowledging a write (false is unsafe)")
      ->capture_default_str();
  app.add_option("--name", options.name, "Member name reported by MemberList")
      ->capture_default_str();
  app.add_option("--watch-progress-notify-interval-ms", progress_ms,
                 "Interval of watch progress notifications")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--io-threads", options.io_threads, "Event loops serving client connections")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--max-connections", options.max_connections,
                 "Client connections open at once; more are refused (GOAWAY ENHANCE_YOUR_CALM)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-concurrent-streams", options.max_concurrent_streams,
                 "Calls open at once on one client connection (SETTINGS_MAX_CONCURRENT_STREAMS)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 31));
  app.add_option("--cert-file", options.tls.cert_file,
                 "Serve TLS with this certificate (PEM, chain allowed)")
      ->check(CLI::ExistingFile);
  app.add_option("--key-file", options.tls.key_file, "The certificate's private key (PEM)")
      ->check(CLI::ExistingFile);
  app.add_option("--trusted-ca-file", options.tls.trusted_ca_file,
                 "CA bundle that client certificates must chain to")
      ->check(CLI::ExistingFile);
  app.add_flag("--client-cert-auth", options.tls.client_cert_auth,
               "Require a client certificate signed by --trusted-ca-file");
  app.add_option("--address-file", address_file, "Write the bound address to this file");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  CLI11_PARSE(app, argc, argv);
  // absl::Mutex (the key index's lock) otherwise tracks lock order on every acquisition.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  options.max_request_bytes = static_cast<size_t>(max_request_bytes);
  options.progress_interval = std::chrono::milliseconds(progress_ms);
  mkube::log::Setup("store", spdlog::level::from_str(log_level));
  RaiseOpenFileLimit();

  // Signals are taken synchronously by this thread; every other thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = mkube::store::server::StoreServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "mkube-store: %s\n", server.status().ToString().c_str());
    return 1;
  }
  if (!address_file.empty() && !WriteAddressFile(address_file, (*server)->address())) {
    std::fprintf(stderr, "mkube-store: cannot write address file %s\n", address_file.c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  Log().info("signal {}: shutting down", sig);
  (*server)->Shutdown();
  server->reset();
  Log().info("stopped");
  return 0;
}
