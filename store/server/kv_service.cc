#include "store/server/kv_service.h"

#include "store/mvcc/validate.h"
#include "proto/grpc_status.h"

namespace mkube::store::server {
namespace {

using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

absl::Status CheckSize(const google::protobuf::Message& req, size_t limit) {
  if (req.ByteSizeLong() > limit) return absl::ResourceExhaustedError(mvcc::kErrRequestTooLarge);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* Fail(grpc::CallbackServerContext* context, const absl::Status& st) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(st));
  return reactor;
}

// Single-request writes run as one-op txns; `take` moves the op's response into resp.
template <typename Resp, typename Take>
grpc::ServerUnaryReactor* WriteAsTxn(const ServiceContext& ctx,
                                     grpc::CallbackServerContext* context, TxnRequest txn,
                                     Resp* resp, Take take) {
  auto* reactor = context->DefaultReactor();
  ctx.store->Txn(std::move(txn),
                 [reactor, resp, take](absl::StatusOr<TxnResponse> r) mutable {
                   if (r.ok()) {
                     take(*r, resp);
                     *resp->mutable_header() = std::move(*r->mutable_header());
                   }
                   reactor->Finish(ToGrpc(r.status()));
                 });
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* KvService::Range(grpc::CallbackServerContext* context,
                                           const etcdserverpb::RangeRequest* req,
                                           etcdserverpb::RangeResponse* resp) {
  if (auto st = mvcc::ValidateRange(*req); !st.ok()) return Fail(context, st);
  auto r = ctx_.store->Range(*req);
  if (!r.ok()) return Fail(context, r.status());
  const int64_t revision = r->header().revision();
  *resp = std::move(*r);
  ctx_.FillHeader(resp->mutable_header());
  resp->mutable_header()->set_revision(revision);
  return Fail(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KvService::Put(grpc::CallbackServerContext* context,
                                         const etcdserverpb::PutRequest* req,
                                         etcdserverpb::PutResponse* resp) {
  if (auto st = CheckSize(*req, ctx_.max_request_bytes); !st.ok()) return Fail(context, st);
  if (auto st = mvcc::ValidatePut(*req); !st.ok()) return Fail(context, st);
  TxnRequest txn;
  *txn.add_success()->mutable_request_put() = *req;
  return WriteAsTxn(ctx_, context, std::move(txn), resp, [](TxnResponse& t, auto* out) {
    if (t.responses(0).response_put().has_prev_kv()) {
      *out->mutable_prev_kv() = std::move(*t.mutable_responses(0)->mutable_response_put()->mutable_prev_kv());
    }
  });
}

grpc::ServerUnaryReactor* KvService::DeleteRange(grpc::CallbackServerContext* context,
                                                 const etcdserverpb::DeleteRangeRequest* req,
                                                 etcdserverpb::DeleteRangeResponse* resp) {
  if (auto st = mvcc::ValidateDeleteRange(*req); !st.ok()) return Fail(context, st);
  TxnRequest txn;
  *txn.add_success()->mutable_request_delete_range() = *req;
  return WriteAsTxn(ctx_, context, std::move(txn), resp, [](TxnResponse& t, auto* out) {
    auto* d = t.mutable_responses(0)->mutable_response_delete_range();
    out->set_deleted(d->deleted());
    out->mutable_prev_kvs()->Swap(d->mutable_prev_kvs());
  });
}

grpc::ServerUnaryReactor* KvService::Txn(grpc::CallbackServerContext* context,
                                         const etcdserverpb::TxnRequest* req,
                                         etcdserverpb::TxnResponse* resp) {
  if (auto st = CheckSize(*req, ctx_.max_request_bytes); !st.ok()) return Fail(context, st);
  if (auto st = mvcc::ValidateTxn(*req, ctx_.max_txn_ops); !st.ok()) return Fail(context, st);
  return WriteAsTxn(ctx_, context, *req, resp, [](TxnResponse& t, TxnResponse* out) {
    out->set_succeeded(t.succeeded());
    out->mutable_responses()->Swap(t.mutable_responses());
  });
}

grpc::ServerUnaryReactor* KvService::Compact(grpc::CallbackServerContext* context,
                                             const etcdserverpb::CompactionRequest* req,
                                             etcdserverpb::CompactionResponse* resp) {
  auto* reactor = context->DefaultReactor();
  const ServiceContext& ctx = ctx_;
  ctx_.store->Compact(req->revision(), req->physical(), [reactor, resp, &ctx](absl::Status st) {
    if (st.ok()) ctx.FillHeader(resp->mutable_header());
    reactor->Finish(ToGrpc(st));
  });
  return reactor;
}

}  // namespace mkube::store::server
