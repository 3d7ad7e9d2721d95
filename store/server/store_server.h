#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "store/lease/clock.h"
#include "store/lease/lessor.h"
#include "store/mvcc/kv_store.h"
#include "store/rpc/server.h"
#include "store/server/context.h"
#include "store/watch/watch_hub.h"

namespace mkube::store::server {

struct ServerOptions {
  mvcc::StoreOptions store;
  std::string listen = "127.0.0.1:2379";
  size_t max_request_bytes = 1536 * 1024;
  std::string name = "default";
  std::chrono::milliseconds progress_interval = std::chrono::minutes(10);
  // Event loops serving connections.
  int io_threads = 1;
  // Client connections open at once (more are refused).
  size_t max_connections = 10000;
  // Calls open at once on one connection (more are refused, and gRPC clients wait).
  uint32_t max_concurrent_streams = 1000;
  // Serve TLS (cert_file set), requiring client certificates if asked. Without it the store
  // listens on loopback addresses only.
  rpc::TlsOptions tls;
};

// Whether a listen address ("host:port", "[v6]:port") names this host's loopback only.
bool IsLoopback(std::string_view listen);

// mkube-store as a whole: the store, leases, the watch hub and etcd's gRPC services on them.
class StoreServer {
 public:
  static absl::StatusOr<std::unique_ptr<StoreServer>> Start(const ServerOptions& options);
  ~StoreServer();

  // The address really bound (port 0 resolved).
  const std::string& address() const { return address_; }
  void Shutdown();

 private:
  StoreServer() = default;

  SteadyClock clock_;
  mvcc::KvStorePtr store_;
  std::unique_ptr<lease::Lessor> lessor_;
  std::unique_ptr<watch::WatchHub> hub_;
  std::unique_ptr<Executor> readers_;
  ServiceContext ctx_;
  std::unique_ptr<rpc::Server> server_;
  std::string address_;
  bool shut_down_ = false;
};

}  // namespace mkube::store::server
