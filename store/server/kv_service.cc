#include "store/mvcc/reader.h"
#include "store/mvcc/validate.h"
#include "store/server/services.h"

namespace mkube::store::server {
namespace {

using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

absl::Status CheckSize(const google::protobuf::Message& req, size_t limit) {
  if (req.ByteSizeLong() > limit) return absl::ResourceExhaustedError(mvcc::kErrRequestTooLarge);
  return absl::OkStatus();
}

// Single-request writes run as one-op txns; `take` moves the op's response into Resp. The
// answer is made on the store's writer thread, or on the loop's when the call is its only work
// and the store is idle.
template <typename Resp, typename Take>
void WriteAsTxn(const ServiceContext& ctx, TxnRequest txn, rpc::Responder responder, Take take) {
  const bool quiet = responder.quiet();
  ctx.store->Txn(std::move(txn), [responder = std::move(responder),
                                  take](absl::StatusOr<TxnResponse> r) mutable {
    if (!r.ok()) {
      responder.Fail(r.status());
      return;
    }
    Resp resp;
    take(*r, &resp);
    *resp.mutable_header() = std::move(*r->mutable_header());
    responder.Reply(resp);
  }, /*commit_if_idle=*/quiet);
}

void Reply(const ServiceContext& ctx, absl::StatusOr<etcdserverpb::RangeResponse> r,
           rpc::Responder responder) {
  if (!r.ok()) return responder.Fail(r.status());
  const int64_t revision = r->header().revision();
  ctx.FillHeader(r->mutable_header());
  r->mutable_header()->set_revision(revision);
  responder.Reply(*r);
}

void Range(const ServiceContext& ctx, const etcdserverpb::RangeRequest& req,
           rpc::Responder responder) {
  Reply(ctx, ctx.store->Range(req), std::move(responder));
}

}  // namespace

void AddKvService(rpc::Server& server, const ServiceContext& ctx) {
  AddMethod<etcdserverpb::RangeRequest>(
      server, "/etcdserverpb.KV/Range", [&ctx](auto& req, rpc::Responder responder) {
        if (auto st = mvcc::ValidateRange(req); !st.ok()) return responder.Fail(st);
        // A read may wait for the disk: on the loop only when it has nothing else to do (as
        // a write's sync may) or what it reads is in memory, else on a reader thread.
        if (responder.quiet()) return Range(ctx, req, std::move(responder));
        if (auto r = ctx.store->Range(req, /*cache_only=*/true); !mvcc::IsNotCached(r.status())) {
          return Reply(ctx, std::move(r), std::move(responder));
        }
        struct Call {
          etcdserverpb::RangeRequest req;
          rpc::Responder responder;
        };
        auto call = std::make_shared<Call>(Call{std::move(req), std::move(responder)});
        if (!ctx.readers->Run(
                [&ctx, call] { Range(ctx, call->req, std::move(call->responder)); })) {
          call->responder.Fail(absl::ResourceExhaustedError(mvcc::kErrTooManyRequests));
        }
      });

  AddMethod<etcdserverpb::PutRequest>(
      server, "/etcdserverpb.KV/Put", [&ctx](auto& req, rpc::Responder responder) {
        if (auto st = CheckSize(req, ctx.max_request_bytes); !st.ok()) return responder.Fail(st);
        if (auto st = mvcc::ValidatePut(req); !st.ok()) return responder.Fail(st);
        TxnRequest txn;
        *txn.add_success()->mutable_request_put() = std::move(req);
        WriteAsTxn<etcdserverpb::PutResponse>(
            ctx, std::move(txn), std::move(responder), [](TxnResponse& t, auto* out) {
              auto* put = t.mutable_responses(0)->mutable_response_put();
              if (put->has_prev_kv()) *out->mutable_prev_kv() = std::move(*put->mutable_prev_kv());
            });
      });

  AddMethod<etcdserverpb::DeleteRangeRequest>(
      server, "/etcdserverpb.KV/DeleteRange", [&ctx](auto& req, rpc::Responder responder) {
        if (auto st = mvcc::ValidateDeleteRange(req); !st.ok()) return responder.Fail(st);
        TxnRequest txn;
        *txn.add_success()->mutable_request_delete_range() = std::move(req);
        WriteAsTxn<etcdserverpb::DeleteRangeResponse>(
            ctx, std::move(txn), std::move(responder), [](TxnResponse& t, auto* out) {
              auto* d = t.mutable_responses(0)->mutable_response_delete_range();
              out->set_deleted(d->deleted());
              out->mutable_prev_kvs()->Swap(d->mutable_prev_kvs());
            });
      });

  AddMethod<TxnRequest>(
      server, "/etcdserverpb.KV/Txn", [&ctx](TxnRequest& req, rpc::Responder responder) {
        if (auto st = CheckSize(req, ctx.max_request_bytes); !st.ok()) return responder.Fail(st);
        if (auto st = mvcc::ValidateTxn(req, ctx.max_txn_ops); !st.ok()) {
          return responder.Fail(st);
        }
        WriteAsTxn<TxnResponse>(ctx, std::move(req), std::move(responder),
                                [](TxnResponse& t, TxnResponse* out) {
                                  out->set_succeeded(t.succeeded());
                                  out->mutable_responses()->Swap(t.mutable_responses());
                                });
      });

  AddMethod<etcdserverpb::CompactionRequest>(
      server, "/etcdserverpb.KV/Compact", [&ctx](auto& req, rpc::Responder responder) {
        ctx.store->Compact(req.revision(), req.physical(),
                           [&ctx, responder = std::move(responder)](absl::Status st) mutable {
                             if (!st.ok()) return responder.Fail(st);
                             etcdserverpb::CompactionResponse resp;
                             ctx.FillHeader(resp.mutable_header());
                             responder.Reply(resp);
                           });
      });
}

}  // namespace mkube::store::server
