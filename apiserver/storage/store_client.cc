#include "apiserver/storage/store_client.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
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

template <typename Req, typename Resp>
absl::StatusOr<Resp> Call(etcdserverpb::KV::Stub* stub,
                          grpc::Status (etcdserverpb::KV::Stub::*m)(grpc::ClientContext*, const Req&, Resp*),
                          const Req& req) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kTimeout);
  ctx.set_wait_for_ready(true);
  Resp resp;
  auto st = (stub->*m)(&ctx, req, &resp);
  if (!st.ok()) return FromGrpc(st);
  return resp;
}

}  // namespace

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(end.back() + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

StoreClient::StoreClient(const std::string& endpoints, const StoreTls& tls) {
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

absl::StatusOr<etcdserverpb::RangeResponse> StoreClient::List(const std::string& prefix,
                                                              int64_t limit) {
  etcdserverpb::RangeRequest req;
  req.set_key(prefix);
  req.set_range_end(PrefixEnd(prefix));
  req.set_limit(limit);
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Range, req);
}

absl::StatusOr<etcdserverpb::RangeResponse> StoreClient::Get(const std::string& key) {
  etcdserverpb::RangeRequest req;
  req.set_key(key);
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Range, req);
}

absl::StatusOr<etcdserverpb::TxnResponse> StoreClient::Create(const std::string& key,
                                                              const std::string& value) {
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Txn, CreateTxn(key, value));
}

etcdserverpb::TxnRequest StoreClient::CreateTxn(const std::string& key, const std::string& value) {
  etcdserverpb::TxnRequest t;
  auto* c = t.add_compare();
  c->set_key(key);
  c->set_target(etcdserverpb::Compare::CREATE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_create_revision(0);
  auto* put = t.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  return t;
}

namespace {

// A transaction whose success branch runs only if `key` was last written at `revision`; its
// failure branch reads the key, so a conflict can be told from a deletion.
etcdserverpb::TxnRequest IfModRevision(const std::string& key, int64_t revision) {
  etcdserverpb::TxnRequest t;
  auto* c = t.add_compare();
  c->set_key(key);
  c->set_target(etcdserverpb::Compare::MOD);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_mod_revision(revision);
  t.add_failure()->mutable_request_range()->set_key(key);
  return t;
}

}  // namespace

absl::StatusOr<etcdserverpb::TxnResponse> StoreClient::Update(const std::string& key,
                                                              int64_t revision,
                                                              const std::string& value) {
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Txn, UpdateTxn(key, revision, value));
}

etcdserverpb::TxnRequest StoreClient::UpdateTxn(const std::string& key, int64_t revision,
                                                const std::string& value) {
  etcdserverpb::TxnRequest t = IfModRevision(key, revision);
  auto* put = t.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  return t;
}

absl::StatusOr<etcdserverpb::TxnResponse> StoreClient::Delete(const std::string& key,
                                                              int64_t revision) {
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Txn, DeleteTxn(key, revision));
}

etcdserverpb::TxnRequest StoreClient::DeleteTxn(const std::string& key, int64_t revision) {
  etcdserverpb::TxnRequest t = IfModRevision(key, revision);
  auto* del = t.add_success()->mutable_request_delete_range();
  del->set_key(key);
  del->set_prev_kv(true);
  return t;
}

absl::StatusOr<etcdserverpb::TxnResponse> StoreClient::Txn(const etcdserverpb::TxnRequest& req) {
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Txn, req);
}

// What every call to the store is given: its deadline, and it waits while the store is
// being connected to.
static void PrepareAsync(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + kTimeout);
  ctx->set_wait_for_ready(true);
}

void StoreClient::GetAsync(const std::string& key, Done<etcdserverpb::RangeResponse> done) {
  etcdserverpb::RangeRequest req;
  req.set_key(key);
  CallAsync<etcdserverpb::RangeRequest, etcdserverpb::RangeResponse>(
      std::move(req), std::move(done), PrepareAsync,
      [this](auto* ctx, auto* req, auto* resp, auto cb) {
        kv_->async()->Range(ctx, req, resp, std::move(cb));
      });
}

void StoreClient::TxnAsync(etcdserverpb::TxnRequest req, Done<etcdserverpb::TxnResponse> done) {
  CallAsync<etcdserverpb::TxnRequest, etcdserverpb::TxnResponse>(
      std::move(req), std::move(done), PrepareAsync,
      [this](auto* ctx, auto* req, auto* resp, auto cb) {
        kv_->async()->Txn(ctx, req, resp, std::move(cb));
      });
}

absl::Status StoreClient::Compact(int64_t revision) {
  etcdserverpb::CompactionRequest req;
  req.set_revision(revision);
  return Call(kv_.get(), &etcdserverpb::KV::Stub::Compact, req).status();
}

}  // namespace mkube::apiserver::storage
