#pragma once

#include "proto/etcd/rpc.grpc.pb.h"
#include "store/server/context.h"

namespace mkube::store::server {

// etcd's KV service over the MVCC store. Writes finish from the store's writer thread.
class KvService final : public etcdserverpb::KV::CallbackService {
 public:
  explicit KvService(const ServiceContext& ctx) : ctx_(ctx) {}

  grpc::ServerUnaryReactor* Range(grpc::CallbackServerContext* context,
                                  const etcdserverpb::RangeRequest* req,
                                  etcdserverpb::RangeResponse* resp) override;
  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* context,
                                const etcdserverpb::PutRequest* req,
                                etcdserverpb::PutResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteRange(grpc::CallbackServerContext* context,
                                        const etcdserverpb::DeleteRangeRequest* req,
                                        etcdserverpb::DeleteRangeResponse* resp) override;
  grpc::ServerUnaryReactor* Txn(grpc::CallbackServerContext* context,
                                const etcdserverpb::TxnRequest* req,
                                etcdserverpb::TxnResponse* resp) override;
  grpc::ServerUnaryReactor* Compact(grpc::CallbackServerContext* context,
                                    const etcdserverpb::CompactionRequest* req,
                                    etcdserverpb::CompactionResponse* resp) override;

 private:
  const ServiceContext& ctx_;
};

}  // namespace mkube::store::server
