#pragma once

#include <memory>
#include <string>

#include "apiserver/storage/storage.h"
#include "grpcpp/grpcpp.h"
#include "proto/etcd/rpc.grpc.pb.h"

namespace mkube::apiserver::storage {

// TLS towards the store, as the apiserver's --etcd-cafile/--etcd-certfile/--etcd-keyfile
// give it (PEM contents; a client certificate only when the store asks for one).
struct StoreTls {
  bool enabled = false;
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
};

// The storage on any etcd v3 endpoint (mkube-store or an etcd cluster), through etcd's gRPC
// API. With several endpoints it connects to the first that answers and fails over.
class EtcdStorage final : public Storage {
 public:
  // endpoints: "host:port,host:port", each may start with http:// or https://.
  explicit EtcdStorage(const std::string& endpoints, const StoreTls& tls = {});

  absl::StatusOr<etcdserverpb::RangeResponse> Get(const std::string& key) override;
  // `done` runs on one of gRPC's threads.
  void GetAsync(const std::string& key, Done<etcdserverpb::RangeResponse> done) override;
  absl::StatusOr<etcdserverpb::RangeResponse> List(const std::string& prefix,
                                                   int64_t limit = 0) override;
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& req) override;
  void TxnAsync(etcdserverpb::TxnRequest req, Done<etcdserverpb::TxnResponse> done) override;
  // Each watch is a gRPC stream of its own.
  WatchStreamPtr Watch(etcdserverpb::WatchCreateRequest create,
                       absl::Duration timeout = absl::InfiniteDuration()) override;
  absl::Status Compact(int64_t revision) override;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
};

}  // namespace mkube::apiserver::storage
