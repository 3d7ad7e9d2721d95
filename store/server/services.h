#pragma once

#include <string>
#include <utility>

#include "store/rpc/server.h"
#include "store/server/context.h"

// etcd's services (KV, Watch, Lease, Maintenance, Cluster) over the store, on the rpc
// transport. `ctx` must outlive the server.
namespace mkube::store::server {

// The etcd release whose API this server speaks, reported by Status.
inline constexpr char kEtcdApiVersion[] = "3.4.0";

void AddKvService(rpc::Server& server, const ServiceContext& ctx);
// A watch stream buffers at most high_water bytes; once refused, it takes more below low_water.
void AddWatchService(rpc::Server& server, const ServiceContext& ctx, size_t high_water = 4 << 20,
                     size_t low_water = 1 << 20);
void AddLeaseService(rpc::Server& server, const ServiceContext& ctx);
// Maintenance.Status and Cluster.MemberList of a single-member cluster.
void AddMaintenanceServices(rpc::Server& server, const ServiceContext& ctx);

// Registers a unary method whose request decodes into Req; fn(Req&, rpc::Responder) answers.
template <typename Req, typename Fn>
void AddMethod(rpc::Server& server, std::string path, Fn fn) {
  server.AddUnary(std::move(path), [fn = std::move(fn)](std::string_view bytes,
                                                          rpc::Responder responder) {
    Req req;
    if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      responder.Fail(absl::InvalidArgumentError("cannot decode the request"));
      return;
    }
    fn(req, std::move(responder));
  });
}

}  // namespace mkube::store::server
