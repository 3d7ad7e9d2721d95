#include "store/server/store_server.h"

#include <arpa/inet.h>

#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"
#include "store/server/services.h"

namespace mkube::store::server {

namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("server");
  return logger;
}

// Threads for reads that may wait for the disk (past the executor's 10,000 waiting, a read is
// refused, as a write past the store's queue is, with etcd's "too many requests").
constexpr size_t kReadThreads = 4;

}  // namespace

bool IsLoopback(std::string_view listen) {
  const std::string_view host = rpc::HostOf(listen);
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, std::string(host).c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

absl::StatusOr<std::unique_ptr<StoreServer>> StoreServer::Start(const ServerOptions& options) {
  std::shared_ptr<rpc::TlsContext> tls;
  if (!options.tls.cert_file.empty() || !options.tls.key_file.empty()) {
    MKUBE_ASSIGN_OR_RETURN(auto loaded, rpc::TlsContext::Load(options.tls));
    tls = std::move(loaded);
  } else if (options.tls.client_cert_auth || !options.tls.trusted_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "a trusted CA file or client certificate authentication needs TLS (a certificate "
        "file and a key file)");
  } else if (!IsLoopback(options.listen)) {
    return absl::InvalidArgumentError(fmt::format(
        "{} is not a loopback address: serving it needs TLS (a certificate file and a key "
        "file)",
        options.listen));
  }
  std::unique_ptr<StoreServer> s(new StoreServer());
  MKUBE_ASSIGN_OR_RETURN(auto store, mvcc::KvStore::Open(options.store));
  s->store_ = std::move(store);
  s->lessor_ = std::make_unique<lease::Lessor>(s->store_.get(), &s->clock_);
  MKUBE_RETURN_IF_ERROR(s->lessor_->Recover());
  s->store_->SetLeaseView(s->lessor_.get());
  s->store_->AddCommitListener(s->lessor_.get());
  watch::HubOptions hub_options;
  hub_options.progress_interval = options.progress_interval;
  s->hub_ = std::make_unique<watch::WatchHub>(s->store_.get(), hub_options);
  s->store_->AddCommitListener(s->hub_.get());

  s->ctx_.store = s->store_.get();
  s->ctx_.lessor = s->lessor_.get();
  s->ctx_.hub = s->hub_.get();
  s->readers_ = std::make_unique<Executor>(kReadThreads);
  s->ctx_.readers = s->readers_.get();
  s->ctx_.max_request_bytes = options.max_request_bytes;
  s->ctx_.name = options.name;

  rpc::ServerOptions rpc_options;
  rpc_options.listen = options.listen;
  rpc_options.loops = options.io_threads;
  rpc_options.max_connections = options.max_connections;
  rpc_options.max_concurrent_streams = options.max_concurrent_streams;
  rpc_options.tls = tls;
  // Larger messages are refused by the transport; the margin lets the services give etcd's
  // own message for sizes just above the limit.
  rpc_options.max_message_bytes = options.max_request_bytes + 512 * 1024;
  s->server_ = std::make_unique<rpc::Server>(rpc_options);
  AddKvService(*s->server_, s->ctx_);
  AddWatchService(*s->server_, s->ctx_);
  AddLeaseService(*s->server_, s->ctx_);
  AddMaintenanceServices(*s->server_, s->ctx_);
  MKUBE_RETURN_IF_ERROR(s->server_->Start());
  s->address_ = s->server_->address();
  s->ctx_.client_url = (tls ? "https://" : "http://") + s->address_;
  s->lessor_->Start();
  s->hub_->Start();
  Log().info("mkube-store serving on {} ({})", s->address_,
             !tls                           ? "plaintext"
             : options.tls.client_cert_auth ? "TLS, client certificates required"
                                            : "TLS");
  return s;
}

void StoreServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // Stop taking requests, give the ones in flight a moment, then stop the parts below.
  server_->Shutdown(std::chrono::seconds(2));
  hub_->Stop();
  lessor_->Stop();
}

StoreServer::~StoreServer() {
  if (server_) Shutdown();
  // The store answers the writes still queued as it closes: into the stopped server's loops,
  // which must still exist, and past the (stopped) hub and lessor it tells of commits.
  // Reads still waiting for a reader are answered first, the same way.
  readers_.reset();
  store_.reset();
  server_.reset();
  hub_.reset();
  lessor_.reset();
}

}  // namespace mkube::store::server
