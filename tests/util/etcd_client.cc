#include "tests/util/etcd_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace mkube::testing {

EtcdClient::EtcdClient(const std::string& address,
                       std::shared_ptr<grpc::ChannelCredentials> credentials) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT32_MAX);
  // Servers under test start and restart all the time: reconnect quickly.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  if (!credentials) credentials = grpc::InsecureChannelCredentials();
  channel_ = grpc::CreateCustomChannel(address, credentials, args);
  kv_ = etcdserverpb::KV::NewStub(channel_);
  watch_ = etcdserverpb::Watch::NewStub(channel_);
  lease_ = etcdserverpb::Lease::NewStub(channel_);
}

namespace {

// One blocking unary call with a deadline.
template <typename Stub, typename Req, typename Resp>
absl::StatusOr<Resp> Unary(Stub* stub,
                           grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                           const Req& req, std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  Resp resp;
  auto st = (stub->*method)(&ctx, req, &resp);
  if (!st.ok()) return FromGrpc(st);
  return resp;
}

}  // namespace

absl::StatusOr<etcdserverpb::PutResponse> EtcdClient::Put(const std::string& key,
                                                          const std::string& value,
                                                          int64_t lease) {
  etcdserverpb::PutRequest req;
  req.set_key(key);
  req.set_value(value);
  req.set_lease(lease);
  return Unary(kv_.get(), &etcdserverpb::KV::Stub::Put, req);
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& req) {
  return Unary(kv_.get(), &etcdserverpb::KV::Stub::Range, req);
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Get(const std::string& key,
                                                            int64_t revision) {
  etcdserverpb::RangeRequest req;
  req.set_key(key);
  req.set_revision(revision);
  return Range(req);
}

bool EtcdClient::Ready() {
  etcdserverpb::RangeRequest req;
  req.set_key("health");
  return Unary(kv_.get(), &etcdserverpb::KV::Stub::Range, req, std::chrono::seconds(1)).ok();
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> EtcdClient::Delete(const std::string& key,
                                                                     const std::string& end) {
  etcdserverpb::DeleteRangeRequest req;
  req.set_key(key);
  req.set_range_end(end);
  return Unary(kv_.get(), &etcdserverpb::KV::Stub::DeleteRange, req);
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& req) {
  return Unary(kv_.get(), &etcdserverpb::KV::Stub::Txn, req);
}

absl::Status EtcdClient::Compact(int64_t revision, bool physical) {
  etcdserverpb::CompactionRequest req;
  req.set_revision(revision);
  req.set_physical(physical);
  return Unary(kv_.get(), &etcdserverpb::KV::Stub::Compact, req, std::chrono::seconds(30))
      .status();
}

WatchStream::WatchStream(EtcdClient& client) : stream_(client.watch()->Watch(&context_)) {}

WatchStream::~WatchStream() {
  context_.TryCancel();
  etcdserverpb::WatchResponse drain;
  while (stream_->Read(&drain)) {
  }
  stream_->Finish().ok();
}

bool WatchStream::Create(const etcdserverpb::WatchCreateRequest& req) {
  etcdserverpb::WatchRequest w;
  *w.mutable_create_request() = req;
  return Send(w);
}

bool WatchStream::Send(const etcdserverpb::WatchRequest& req) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return stream_->Write(req);
}

bool WatchStream::Read(etcdserverpb::WatchResponse* resp) { return stream_->Read(resp); }

int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

}  // namespace mkube::testing
