#include "store/server/lease_service.h"

#include "store/mvcc/validate.h"
#include "proto/grpc_status.h"

namespace mkube::store::server {
namespace {

using etcdserverpb::LeaseKeepAliveRequest;
using etcdserverpb::LeaseKeepAliveResponse;

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, const absl::Status& st) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(st));
  return reactor;
}

// Answers each keep-alive in turn: read, renew, write, read again.
class KeepAliveStream final
    : public grpc::ServerBidiReactor<LeaseKeepAliveRequest, LeaseKeepAliveResponse> {
 public:
  explicit KeepAliveStream(const ServiceContext& ctx) : ctx_(ctx) { StartRead(&req_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    resp_.Clear();
    ctx_.FillHeader(resp_.mutable_header());
    resp_.set_id(req_.id());
    resp_.set_ttl(ctx_.lessor->KeepAlive(req_.id()));
    StartWrite(&resp_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    StartRead(&req_);
  }

  void OnDone() override { delete this; }

 private:
  const ServiceContext& ctx_;
  LeaseKeepAliveRequest req_;
  LeaseKeepAliveResponse resp_;
};

}  // namespace

grpc::ServerUnaryReactor* LeaseService::LeaseGrant(grpc::CallbackServerContext* context,
                                                   const etcdserverpb::LeaseGrantRequest* req,
                                                   etcdserverpb::LeaseGrantResponse* resp) {
  auto* reactor = context->DefaultReactor();
  const ServiceContext& ctx = ctx_;
  ctx_.lessor->Grant(req->id(), req->ttl(),
                     [reactor, resp, &ctx](absl::StatusOr<lease::LeaseInfo> r) {
                       if (r.ok()) {
                         ctx.FillHeader(resp->mutable_header());
                         resp->set_id(r->id);
                         resp->set_ttl(r->granted_ttl);
                       }
                       reactor->Finish(ToGrpc(r.status()));
                     });
  return reactor;
}

grpc::ServerUnaryReactor* LeaseService::LeaseRevoke(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::LeaseRevokeRequest* req,
                                                    etcdserverpb::LeaseRevokeResponse* resp) {
  auto* reactor = context->DefaultReactor();
  const ServiceContext& ctx = ctx_;
  ctx_.lessor->Revoke(req->id(), [reactor, resp, &ctx](absl::Status st) {
    if (st.ok()) ctx.FillHeader(resp->mutable_header());
    reactor->Finish(ToGrpc(st));
  });
  return reactor;
}

grpc::ServerBidiReactor<LeaseKeepAliveRequest, LeaseKeepAliveResponse>*
LeaseService::LeaseKeepAlive(grpc::CallbackServerContext* context) {
  return new KeepAliveStream(ctx_);
}

grpc::ServerUnaryReactor* LeaseService::LeaseTimeToLive(
    grpc::CallbackServerContext* context, const etcdserverpb::LeaseTimeToLiveRequest* req,
    etcdserverpb::LeaseTimeToLiveResponse* resp) {
  ctx_.FillHeader(resp->mutable_header());
  resp->set_id(req->id());
  auto info = ctx_.lessor->TimeToLive(req->id(), req->keys());
  if (!info) {
    resp->set_ttl(-1);
    return Done(context, absl::OkStatus());
  }
  resp->set_ttl(info->remaining_ttl);
  resp->set_grantedttl(info->granted_ttl);
  for (auto& k : info->keys) resp->add_keys(std::move(k));
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* LeaseService::LeaseLeases(grpc::CallbackServerContext* context,
                                                    const etcdserverpb::LeaseLeasesRequest* req,
                                                    etcdserverpb::LeaseLeasesResponse* resp) {
  ctx_.FillHeader(resp->mutable_header());
  for (int64_t id : ctx_.lessor->Leases()) resp->add_leases()->set_id(id);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* MaintenanceService::Status(grpc::CallbackServerContext* context,
                                                     const etcdserverpb::StatusRequest* req,
                                                     etcdserverpb::StatusResponse* resp) {
  ctx_.FillHeader(resp->mutable_header());
  resp->set_version(kEtcdApiVersion);
  const int64_t size = ctx_.store->DatabaseSize();
  resp->set_dbsize(size);
  resp->set_dbsizeinuse(size);
  resp->set_leader(ctx_.store->member_id());
  resp->set_raftindex(ctx_.store->applied_index());
  resp->set_raftappliedindex(ctx_.store->applied_index());
  resp->set_raftterm(mvcc::kRaftTerm);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ClusterService::MemberList(grpc::CallbackServerContext* context,
                                                     const etcdserverpb::MemberListRequest* req,
                                                     etcdserverpb::MemberListResponse* resp) {
  ctx_.FillHeader(resp->mutable_header());
  // etcd leaves the revision out of this header.
  resp->mutable_header()->set_revision(0);
  auto* m = resp->add_members();
  m->set_id(ctx_.store->member_id());
  m->set_name(ctx_.name);
  m->add_peerurls("http://localhost:2380");
  m->add_clienturls(ctx_.client_url);
  return Done(context, absl::OkStatus());
}

}  // namespace mkube::store::server
