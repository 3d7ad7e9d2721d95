#include "apiserver/storage/etcd_storage.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "apiserver/storage/requests.h"
#include "proto/async_call.h"
#include "proto/grpc_status.h"

namespace mkube::apiserver::storage {
namespace {

constexpr auto kTimeout = std::chrono::seconds(10);

// The endpoints as HOST:PORT, without a scheme.
std::vector<std::string> Endpoints(const std::string& endpoints) {
  std::vector<std::string> list = absl::StrSplit(endpoints, ',', absl::SkipEmpty());
  for (std::string& e : list) {
    for (absl::string_view scheme : {"http://", "https://"}) {
      if (absl::StartsWith(e, scheme)) e.erase(0, scheme.size());
    }
    if (!e.empty() && e.back() == '/') e.pop_back();
  }
  return list;
}

std::string Target(const std::vector<std::string>& list) {
  if (list.size() == 1) return list[0];
  // pick_first over the members: the first that connects, the next when it fails.
  std::string target = "ipv4:";
  for (size_t i = 0; i < list.size(); ++i) target += (i ? "," : "") + list[i];
  return target;
}

// What every call to the store is given: its deadline, and it waits while the store is
// being connected to.
void Prepare(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + kTimeout);
  ctx->set_wait_for_ready(true);
}

template <typename Req, typename Resp>
absl::StatusOr<Resp> Call(etcdserverpb::KV::Stub* stub,
                          grpc::Status (etcdserverpb::KV::Stub::*m)(grpc::ClientContext*, const Req&, Resp*),
                          const Req& req) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  Resp resp;
  auto st = (stub->*m)(&ctx, req, &resp);
  if (!st.ok()) return FromGrpc(st);
  return resp;
}

// A watch on a gRPC stream of its own. The stream is opened by the first Read, so that a
// Cancel can end it before it is (gRPC cancels a call whose context was cancelled first).
class EtcdWatchStream final : public WatchStream {
 public:
  EtcdWatchStream(etcdserverpb::Watch::Stub* stub, etcdserverpb::WatchCreateRequest create,
                  absl::Duration timeout)
      : stub_(stub) {
    *request_.mutable_create_request() = std::move(create);
    if (timeout != absl::InfiniteDuration()) {
      ctx_.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    }
  }
  ~EtcdWatchStream() override {
    if (!stream_) return;
    ctx_.TryCancel();
    etcdserverpb::WatchResponse rest;
    while (stream_->Read(&rest)) {
    }
    stream_->Finish();
  }

  bool Read(etcdserverpb::WatchResponse* response) override {
    if (!stream_) {
      stream_ = stub_->Watch(&ctx_);
      stream_->Write(request_);
    }
    return stream_->Read(response);
  }
  void Cancel() override { ctx_.TryCancel(); }

 private:
  etcdserverpb::Watch::Stub* const stub_;
  etcdserverpb::WatchRequest request_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
      stream_;
};

}  // namespace

EtcdStorage::EtcdStorage(const std::string& endpoints, const StoreTls& tls) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT32_MAX);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  const std::vector<std::string> list = Endpoints(endpoints);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (tls.enabled && list.size() > 1) {
    // One channel over the members names no host to check certificates against: the first
    // endpoint's host is that name, so every member's certificate must carry it.
    std::string host = list[0].substr(0, list[0].rfind(':'));
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    args.SetSslTargetNameOverride(host);
  }
  if (tls.enabled) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = tls.ca_pem;
    ssl.pem_private_key = tls.key_pem;
    ssl.pem_cert_chain = tls.cert_pem;
    creds = grpc::SslCredentials(ssl);
  }
  channel_ = grpc::CreateCustomChannel(Target(list), creds, args);
  kv_ = etcdserverpb::KV::NewStub(channel_);
  watch_ = etcdserverpb::Watch::NewStub(channel_);
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdStorage::List(const std::string& prefix,
                                                              int64_t limit) {
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOfPrefix(prefix, limit));
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdStorage::Get(const std::string& key) {
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Range, RangeOfKey(key));
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdStorage::Txn(const etcdserverpb::TxnRequest& req) {
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Txn, req);
}

void EtcdStorage::GetAsync(const std::string& key, Done<etcdserverpb::RangeResponse> done) {
  CallAsync<etcdserverpb::RangeRequest, etcdserverpb::RangeResponse>(
      RangeOfKey(key), std::move(done), Prepare,
      [this](auto* ctx, auto* req, auto* resp, auto cb) {
        kv_->async()->Range(ctx, req, resp, std::move(cb));
      });
}

void EtcdStorage::TxnAsync(etcdserverpb::TxnRequest req, Done<etcdserverpb::TxnResponse> done) {
  CallAsync<etcdserverpb::TxnRequest, etcdserverpb::TxnResponse>(
      std::move(req), std::move(done), Prepare,
      [this](auto* ctx, auto* req, auto* resp, auto cb) {
        kv_->async()->Txn(ctx, req, resp, std::move(cb));
      });
}

WatchStreamPtr EtcdStorage::Watch(etcdserverpb::WatchCreateRequest create,
                                  absl::Duration timeout) {
  return std::make_unique<EtcdWatchStream>(watch_.get(), std::move(create), timeout);
}

absl::Status EtcdStorage::Compact(int64_t revision) {
  etcdserverpb::CompactionRequest req;
  req.set_revision(revision);
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Compact, req).status();
}

}  // namespace mkube::apiserver::storage
