#include "store/mvcc/validate.h"
#include "store/server/services.h"

namespace mkube::store::server {
namespace {

// Answers each keep-alive in order on the stream.
class KeepAliveStream final : public rpc::StreamHandler {
 public:
  KeepAliveStream(const ServiceContext& ctx, std::shared_ptr<rpc::ServerStream> stream)
      : ctx_(ctx), stream_(std::move(stream)) {}

  void OnMessage(std::string_view message) override {
    etcdserverpb::LeaseKeepAliveRequest req;
    if (!req.ParseFromArray(message.data(), static_cast<int>(message.size()))) {
      stream_->Finish(absl::InvalidArgumentError("cannot decode the keep-alive request"));
      return;
    }
    etcdserverpb::LeaseKeepAliveResponse resp;
    ctx_.FillHeader(resp.mutable_header());
    resp.set_id(req.id());
    resp.set_ttl(ctx_.lessor->KeepAlive(req.id()));
    stream_->Write(resp);
  }

  void OnHalfClose() override { stream_->Finish(absl::OkStatus()); }

 private:
  const ServiceContext& ctx_;
  std::shared_ptr<rpc::ServerStream> stream_;
};

}  // namespace

void AddLeaseService(rpc::Server& server, const ServiceContext& ctx) {
  AddMethod<etcdserverpb::LeaseGrantRequest>(
      server, "/etcdserverpb.Lease/LeaseGrant", [&ctx](auto& req, rpc::Responder responder) {
        ctx.lessor->Grant(req.id(), req.ttl(),
                          [&ctx, responder = std::move(responder)](
                              absl::StatusOr<lease::LeaseInfo> r) mutable {
                            if (!r.ok()) return responder.Fail(r.status());
                            etcdserverpb::LeaseGrantResponse resp;
                            ctx.FillHeader(resp.mutable_header());
                            resp.set_id(r->id);
                            resp.set_ttl(r->granted_ttl);
                            responder.Reply(resp);
                          });
      });

  AddMethod<etcdserverpb::LeaseRevokeRequest>(
      server, "/etcdserverpb.Lease/LeaseRevoke", [&ctx](auto& req, rpc::Responder responder) {
        ctx.lessor->Revoke(req.id(),
                           [&ctx, responder = std::move(responder)](absl::Status st) mutable {
                             if (!st.ok()) return responder.Fail(st);
                             etcdserverpb::LeaseRevokeResponse resp;
                             ctx.FillHeader(resp.mutable_header());
                             responder.Reply(resp);
                           });
      });

  server.AddStream("/etcdserverpb.Lease/LeaseKeepAlive",
                   [&ctx](std::shared_ptr<rpc::ServerStream> stream) {
                     return std::make_unique<KeepAliveStream>(ctx, std::move(stream));
                   });

  AddMethod<etcdserverpb::LeaseTimeToLiveRequest>(
      server, "/etcdserverpb.Lease/LeaseTimeToLive", [&ctx](auto& req, rpc::Responder responder) {
        etcdserverpb::LeaseTimeToLiveResponse resp;
        ctx.FillHeader(resp.mutable_header());
        resp.set_id(req.id());
        auto info = ctx.lessor->TimeToLive(req.id(), req.keys());
        if (!info) {
          resp.set_ttl(-1);
        } else {
          resp.set_ttl(info->remaining_ttl);
          resp.set_grantedttl(info->granted_ttl);
          for (auto& k : info->keys) resp.add_keys(std::move(k));
        }
        responder.Reply(resp);
      });

  AddMethod<etcdserverpb::LeaseLeasesRequest>(
      server, "/etcdserverpb.Lease/LeaseLeases", [&ctx](auto&, rpc::Responder responder) {
        etcdserverpb::LeaseLeasesResponse resp;
        ctx.FillHeader(resp.mutable_header());
        for (int64_t id : ctx.lessor->Leases()) resp.add_leases()->set_id(id);
        responder.Reply(resp);
      });
}

void AddMaintenanceServices(rpc::Server& server, const ServiceContext& ctx) {
  AddMethod<etcdserverpb::StatusRequest>(
      server, "/etcdserverpb.Maintenance/Status", [&ctx](auto&, rpc::Responder responder) {
        etcdserverpb::StatusResponse resp;
        ctx.FillHeader(resp.mutable_header());
        resp.set_version(kEtcdApiVersion);
        const int64_t size = ctx.store->DatabaseSize();
        resp.set_dbsize(size);
        resp.set_dbsizeinuse(size);
        resp.set_leader(ctx.store->member_id());
        resp.set_raftindex(ctx.store->applied_index());
        resp.set_raftappliedindex(ctx.store->applied_index());
        resp.set_raftterm(mvcc::kRaftTerm);
        responder.Reply(resp);
      });

  AddMethod<etcdserverpb::MemberListRequest>(
      server, "/etcdserverpb.Cluster/MemberList", [&ctx](auto&, rpc::Responder responder) {
        etcdserverpb::MemberListResponse resp;
        ctx.FillHeader(resp.mutable_header());
        // etcd leaves the revision out of this header.
        resp.mutable_header()->set_revision(0);
        auto* m = resp.add_members();
        m->set_id(ctx.store->member_id());
        m->set_name(ctx.name);
        m->add_peerurls("http://localhost:2380");
        m->add_clienturls(ctx.client_url);
        responder.Reply(resp);
      });
}

}  // namespace mkube::store::server
