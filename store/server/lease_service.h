#pragma once

#include "proto/etcd/rpc.grpc.pb.h"
#include "store/server/context.h"

namespace mkube::store::server {

// The etcd release whose API this server speaks, reported by Status.
inline constexpr char kEtcdApiVersion[] = "3.4.0";

class LeaseService final : public etcdserverpb::Lease::CallbackService {
 public:
  explicit LeaseService(const ServiceContext& ctx) : ctx_(ctx) {}

  grpc::ServerUnaryReactor* LeaseGrant(grpc::CallbackServerContext* context,
                                       const etcdserverpb::LeaseGrantRequest* req,
                                       etcdserverpb::LeaseGrantResponse* resp) override;
  grpc::ServerUnaryReactor* LeaseRevoke(grpc::CallbackServerContext* context,
                                        const etcdserverpb::LeaseRevokeRequest* req,
                                        etcdserverpb::LeaseRevokeResponse* resp) override;
  grpc::ServerBidiReactor<etcdserverpb::LeaseKeepAliveRequest,
                          etcdserverpb::LeaseKeepAliveResponse>*
  LeaseKeepAlive(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* LeaseTimeToLive(grpc::CallbackServerContext* context,
                                            const etcdserverpb::LeaseTimeToLiveRequest* req,
                                            etcdserverpb::LeaseTimeToLiveResponse* resp) override;
  grpc::ServerUnaryReactor* LeaseLeases(grpc::CallbackServerContext* context,
                                        const etcdserverpb::LeaseLeasesRequest* req,
                                        etcdserverpb::LeaseLeasesResponse* resp) override;

 private:
  const ServiceContext& ctx_;
};

// Maintenance.Status and Cluster.MemberList of a single-member cluster.
class MaintenanceService final : public etcdserverpb::Maintenance::CallbackService {
 public:
  explicit MaintenanceService(const ServiceContext& ctx) : ctx_(ctx) {}
  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext* context,
                                   const etcdserverpb::StatusRequest* req,
                                   etcdserverpb::StatusResponse* resp) override;

 private:
  const ServiceContext& ctx_;
};

class ClusterService final : public etcdserverpb::Cluster::CallbackService {
 public:
  explicit ClusterService(const ServiceContext& ctx) : ctx_(ctx) {}
  grpc::ServerUnaryReactor* MemberList(grpc::CallbackServerContext* context,
                                       const etcdserverpb::MemberListRequest* req,
                                       etcdserverpb::MemberListResponse* resp) override;

 private:
  const ServiceContext& ctx_;
};

}  // namespace mkube::store::server
