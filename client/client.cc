#include "client/client.h"

#include <thread>

#include "client/channel.h"
#include "proto/async_call.h"

namespace mkube::client {
namespace {

template <typename Fn>
auto WithRetries(int attempts, Fn fn) -> decltype(fn()) {
  auto r = fn();
  for (int i = 1; i < attempts && !r.ok() && r.status().code() == absl::StatusCode::kUnavailable;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 << std::min(i, 4)));
    r = fn();
  }
  return r;
}

class GrpcWatchStream final : public WatchStream {
 public:
  bool ReadBatch(apiserver::WatchBatch* batch) override { return reader->Read(batch); }
  absl::Status Finish() override { return FromGrpc(reader->Finish()); }
  void Cancel() override { ctx.TryCancel(); }

  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<apiserver::WatchBatch>> reader;
};

}  // namespace

std::shared_ptr<grpc::Channel> NewChannel(const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT32_MAX);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kStreamWindowBytes);
  // A client of its own connection, not one shared with every client of the same target.
  if (options.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (options.ca_pem.empty()) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.ca_pem;
    creds = grpc::SslCredentials(ssl);
  }
  return grpc::CreateCustomChannel(options.address, creds, args);
}

GrpcClient::GrpcClient(ClientOptions options) : options_(std::move(options)) {
  auto channel = NewChannel(options_);
  stub_ = apiserver::Api::NewStub(channel);
  streams_ = apiserver::PodStreams::NewStub(channel);
}

void GrpcClient::Prepare(grpc::ClientContext* ctx) const {
  if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
  ctx->set_deadline(std::chrono::system_clock::now() + options_.timeout);
  if (options_.wait_for_ready) ctx->set_wait_for_ready(true);
}

absl::StatusOr<std::string> GrpcClient::GetRaw(const apiserver::GetRequest& req) {
  return WithRetries(options_.read_attempts, [&]() -> absl::StatusOr<std::string> {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    apiserver::ObjectReply reply;
    if (auto st = stub_->Get(&ctx, req, &reply); !st.ok()) return FromGrpc(st);
    return std::move(*reply.mutable_object());
  });
}

absl::StatusOr<apiserver::ListReply> GrpcClient::List(const apiserver::ListRequest& req) {
  return WithRetries(options_.read_attempts, [&]() -> absl::StatusOr<apiserver::ListReply> {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    apiserver::ListReply reply;
    if (auto st = stub_->List(&ctx, req, &reply); !st.ok()) return FromGrpc(st);
    return reply;
  });
}

absl::StatusOr<std::string> GrpcClient::CreateRaw(const apiserver::CreateRequest& req) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  apiserver::ObjectReply reply;
  if (auto st = stub_->Create(&ctx, req, &reply); !st.ok()) return FromGrpc(st);
  return std::move(*reply.mutable_object());
}

namespace {

// The object an ObjectReply carries, for a RawDone.
std::function<void(absl::StatusOr<apiserver::ObjectReply>)> ObjectOf(ApiClient::RawDone done) {
  return [done = std::move(done)](absl::StatusOr<apiserver::ObjectReply> r) {
    if (!r.ok()) return done(r.status());
    done(std::move(*r->mutable_object()));
  };
}

}  // namespace

void GrpcClient::CreateRawAsync(const apiserver::CreateRequest& req, RawDone done) {
  CallAsync<apiserver::CreateRequest, apiserver::ObjectReply>(
      req, ObjectOf(std::move(done)), [this](grpc::ClientContext* ctx) { Prepare(ctx); },
      [this](auto* ctx, auto* req, auto* reply, auto cb) {
        stub_->async()->Create(ctx, req, reply, std::move(cb));
      });
}

void GrpcClient::UpdateRawAsync(const apiserver::UpdateRequest& req, RawDone done) {
  CallAsync<apiserver::UpdateRequest, apiserver::ObjectReply>(
      req, ObjectOf(std::move(done)), [this](grpc::ClientContext* ctx) { Prepare(ctx); },
      [this](auto* ctx, auto* req, auto* reply, auto cb) {
        stub_->async()->Update(ctx, req, reply, std::move(cb));
      });
}

absl::StatusOr<std::string> GrpcClient::UpdateRaw(const apiserver::UpdateRequest& req) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  apiserver::ObjectReply reply;
  if (auto st = stub_->Update(&ctx, req, &reply); !st.ok()) return FromGrpc(st);
  return std::move(*reply.mutable_object());
}

absl::StatusOr<std::string> GrpcClient::PatchRaw(const apiserver::PatchRequest& req) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  apiserver::ObjectReply reply;
  if (auto st = stub_->Patch(&ctx, req, &reply); !st.ok()) return FromGrpc(st);
  return std::move(*reply.mutable_object());
}

absl::StatusOr<std::string> GrpcClient::Delete(const apiserver::DeleteRequest& req) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  apiserver::ObjectReply reply;
  if (auto st = stub_->Delete(&ctx, req, &reply); !st.ok()) return FromGrpc(st);
  return std::move(*reply.mutable_object());
}

WatchStreamPtr GrpcClient::Watch(const apiserver::WatchRequest& req) {
  auto w = std::make_unique<GrpcWatchStream>();
  if (!options_.token.empty()) w->ctx.AddMetadata("authorization", "Bearer " + options_.token);
  w->reader = stub_->Watch(&w->ctx, req);
  return w;
}

std::unique_ptr<grpc::ClientReader<agent::LogChunk>> GrpcClient::Logs(
    grpc::ClientContext* ctx, const agent::LogRequest& req) {
  if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
  return streams_->Logs(ctx, req);
}

std::unique_ptr<grpc::ClientReaderWriter<agent::ExecInput, agent::ExecOutput>> GrpcClient::Exec(
    grpc::ClientContext* ctx) {
  if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
  return streams_->Exec(ctx);
}

}  // namespace mkube::client
