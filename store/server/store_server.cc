#include "store/server/store_server.h"

#include "fmt/format.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/security/server_credentials.h"
#include "spdlog/spdlog.h"

namespace mkube::store::server {

absl::StatusOr<std::unique_ptr<StoreServer>> StoreServer::Start(const ServerOptions& options) {
  std::unique_ptr<StoreServer> s(new StoreServer());
  auto store = mvcc::KvStore::Open(options.store);
  if (!store.ok()) return store.status();
  s->store_ = std::move(*store);
  s->lessor_ = std::make_unique<lease::Lessor>(s->store_.get(), &s->clock_);
  if (auto st = s->lessor_->Recover(); !st.ok()) return st;
  s->store_->SetLeaseView(s->lessor_.get());
  s->store_->AddCommitListener(s->lessor_.get());
  watch::HubOptions hub_options;
  hub_options.progress_interval = options.progress_interval;
  s->hub_ = std::make_unique<watch::WatchHub>(s->store_.get(), hub_options);
  s->store_->AddCommitListener(s->hub_.get());

  s->ctx_.store = s->store_.get();
  s->ctx_.lessor = s->lessor_.get();
  s->ctx_.hub = s->hub_.get();
  s->ctx_.max_request_bytes = options.max_request_bytes;
  s->ctx_.name = options.name;
  s->kv_ = std::make_unique<KvService>(s->ctx_);
  s->watch_ = std::make_unique<WatchService>(s->ctx_);
  s->lease_ = std::make_unique<LeaseService>(s->ctx_);
  s->maintenance_ = std::make_unique<MaintenanceService>(s->ctx_);
  s->cluster_ = std::make_unique<ClusterService>(s->ctx_);

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &port);
  // Requests above the limit are refused by gRPC itself (RESOURCE_EXHAUSTED); the margin
  // lets the services give etcd's own message for sizes just above it.
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_request_bytes + 512 * 1024));
  builder.SetMaxSendMessageSize(INT32_MAX);
  // etcd clients ping every 10 s on idle streams; a default server would answer GOAWAY.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);

  builder.RegisterService(s->kv_.get());
  builder.RegisterService(s->watch_.get());
  builder.RegisterService(s->lease_.get());
  builder.RegisterService(s->maintenance_.get());
  builder.RegisterService(s->cluster_.get());
  s->server_ = builder.BuildAndStart();
  if (!s->server_ || port == 0) {
    return absl::UnavailableError(fmt::format("cannot listen on {}", options.listen));
  }
  const auto colon = options.listen.rfind(':');
  s->address_ = fmt::format("{}:{}", options.listen.substr(0, colon), port);
  s->ctx_.client_url = "http://" + s->address_;
  s->lessor_->Start();
  s->hub_->Start();
  spdlog::info("mkube-store serving on {}", s->address_);
  return s;
}

void StoreServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // Stop taking requests, give the ones in flight a moment, then stop the parts below.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  hub_->Stop();
  lessor_->Stop();
}

StoreServer::~StoreServer() {
  if (server_) Shutdown();
  hub_.reset();
  lessor_.reset();
  store_.reset();
}

}  // namespace mkube::store::server
