#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "proto/etcd/rpc.grpc.pb.h"
#include "proto/grpc_status.h"

// A small blocking etcd v3 client for tests and benchmarks.
namespace mkube::testing {

class EtcdClient {
 public:
  // Plaintext unless credentials are given.
  explicit EtcdClient(const std::string& address,
                      std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

  absl::StatusOr<etcdserverpb::PutResponse> Put(const std::string& key, const std::string& value,
                                                int64_t lease = 0);
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& req);
  absl::StatusOr<etcdserverpb::RangeResponse> Get(const std::string& key, int64_t revision = 0);
  // A quick read with a short deadline: is the endpoint serving yet?
  bool Ready();
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> Delete(const std::string& key,
                                                           const std::string& range_end = "");
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& req);
  absl::Status Compact(int64_t revision, bool physical = false);

  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  etcdserverpb::KV::Stub* kv() { return kv_.get(); }
  etcdserverpb::Watch::Stub* watch() { return watch_.get(); }
  etcdserverpb::Lease::Stub* lease() { return lease_.get(); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
};

// One Watch stream, read synchronously. Send may be called from any thread.
class WatchStream {
 public:
  explicit WatchStream(EtcdClient& client);
  ~WatchStream();
  bool Create(const etcdserverpb::WatchCreateRequest& req);
  bool Send(const etcdserverpb::WatchRequest& req);
  // Blocks for the next response; false when the stream ended.
  bool Read(etcdserverpb::WatchResponse* resp);
  void Cancel() { context_.TryCancel(); }

 private:
  grpc::ClientContext context_;
  std::mutex write_mu_;  // gRPC allows one write at a time on a stream
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>>
      stream_;
};

// Returns a port that was free a moment ago (for peers that cannot report their own).
int PickFreePort();

}  // namespace mkube::testing
