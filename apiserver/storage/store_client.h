#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
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

// The apiserver's client of the store: any etcd v3 endpoint (mkube-store or an etcd
// cluster). With several endpoints it connects to the first that answers and fails over.
class StoreClient {
 public:
  // endpoints: "host:port,host:port", each may start with http:// or https://.
  explicit StoreClient(const std::string& endpoints, const StoreTls& tls = {});

  // All keys under prefix, at one revision.
  absl::StatusOr<etcdserverpb::RangeResponse> List(const std::string& prefix, int64_t limit = 0);
  absl::StatusOr<etcdserverpb::RangeResponse> Get(const std::string& key);
  // Put only if the key does not exist; false (no error) when it does.
  absl::StatusOr<etcdserverpb::TxnResponse> Create(const std::string& key, const std::string& value);
  // Put only if the key's mod_revision is still `revision`; the failure branch reads the key.
  absl::StatusOr<etcdserverpb::TxnResponse> Update(const std::string& key, int64_t revision,
                                                   const std::string& value);
  // Delete only if the key's mod_revision is still `revision`.
  absl::StatusOr<etcdserverpb::TxnResponse> Delete(const std::string& key, int64_t revision);

  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& req);

  // The same without waiting: `done` runs once, on one of gRPC's threads, when the store has
  // answered (or the call failed). It must not block.
  template <typename Resp>
  using Done = std::function<void(absl::StatusOr<Resp>)>;
  void GetAsync(const std::string& key, Done<etcdserverpb::RangeResponse> done);
  void TxnAsync(etcdserverpb::TxnRequest req, Done<etcdserverpb::TxnResponse> done);

  // The transactions of Create, Update and Delete above.
  static etcdserverpb::TxnRequest CreateTxn(const std::string& key, const std::string& value);
  static etcdserverpb::TxnRequest UpdateTxn(const std::string& key, int64_t revision,
                                            const std::string& value);
  static etcdserverpb::TxnRequest DeleteTxn(const std::string& key, int64_t revision);
  // Drops the history before revision (the store keeps the state at it).
  absl::Status Compact(int64_t revision);

  etcdserverpb::Watch::Stub* watch() { return watch_.get(); }
  etcdserverpb::KV::Stub* kv() { return kv_.get(); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
};

std::string PrefixEnd(const std::string& prefix);

}  // namespace mkube::apiserver::storage
