#include "store/mvcc/txn.h"

#include "base/status.h"
#include "store/mvcc/validate.h"

namespace mkube::store::mvcc {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RequestOp;
using etcdserverpb::ResponseOp;

template <typename T>
bool CompareOrdered(Compare::CompareResult result, const T& have, const T& want) {
  switch (result) {
    case Compare::EQUAL: return have == want;
    case Compare::GREATER: return have > want;
    case Compare::LESS: return have < want;
    case Compare::NOT_EQUAL: return have != want;
    default: return false;
  }
}

bool CompareKv(const Compare& c, const mvccpb::KeyValue& kv) {
  switch (c.target()) {
    case Compare::VERSION: return CompareOrdered(c.result(), kv.version(), c.version());
    case Compare::CREATE:
      return CompareOrdered(c.result(), kv.create_revision(), c.create_revision());
    case Compare::MOD: return CompareOrdered(c.result(), kv.mod_revision(), c.mod_revision());
    case Compare::VALUE: return CompareOrdered(c.result(), kv.value(), c.value());
    case Compare::LEASE: return CompareOrdered(c.result(), kv.lease(), c.lease());
    default: return false;
  }
}

class Applier {
 public:
  Applier(WriteGroup& group, const LeaseView& leases) : group_(group), leases_(leases) {}

  absl::Status Txn(const etcdserverpb::TxnRequest& req, etcdserverpb::TxnResponse* resp) {
    bool ok = true;
    for (const auto& c : req.compare()) {
      MKUBE_ASSIGN_OR_RETURN(auto r, Evaluate(c));
      if (!r) {
        ok = false;
        break;
      }
    }
    resp->set_succeeded(ok);
    for (const auto& op : ok ? req.success() : req.failure()) {
      MKUBE_RETURN_IF_ERROR(Op(op, resp->add_responses()));
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<bool> Evaluate(const Compare& c) {
    KeyRange range(c.key(), c.range_end());
    bool any = false, all = true;
    auto st = group_.ScanCurrent(range, [&](mvccpb::KeyValue&& kv) {
      any = true;
      all = CompareKv(c, kv);
      return all;
    });
    if (!st.ok()) return st;
    if (any) return all;
    // A missing key compares as a zero KeyValue, except that no value matches it.
    if (c.target() == Compare::VALUE) return false;
    return CompareKv(c, mvccpb::KeyValue());
  }

  absl::Status Op(const RequestOp& op, ResponseOp* out) {
    switch (op.request_case()) {
      case RequestOp::kRequestRange: return Range(op.request_range(), out->mutable_response_range());
      case RequestOp::kRequestPut: return Put(op.request_put(), out->mutable_response_put());
      case RequestOp::kRequestDeleteRange:
        return Delete(op.request_delete_range(), out->mutable_response_delete_range());
      case RequestOp::kRequestTxn: return Txn(op.request_txn(), out->mutable_response_txn());
      default: return absl::InvalidArgumentError("etcdserver: request op is not set");
    }
  }

  absl::Status Range(const etcdserverpb::RangeRequest& req, etcdserverpb::RangeResponse* resp) {
    KeyRange range(req.key(), req.range_end());
    const int64_t current = group_.txn_wrote() ? group_.txn_revision() : group_.revision();
    if (req.revision() > current) return absl::OutOfRangeError(kErrFutureRev);
    // Reads of the past inside a txn are rare; they go to the history.
    const int64_t rev = req.revision() > 0 && req.revision() < current ? req.revision() : 0;
    MKUBE_ASSIGN_OR_RETURN(auto found, group_.Collect(range, rev));
    return EvaluateRange(
        req, std::move(found), [&](const std::vector<Found*>& f) { return group_.Load(f); }, resp);
  }

  absl::Status Put(const etcdserverpb::PutRequest& req, etcdserverpb::PutResponse* resp) {
    auto prev = group_.GetCurrent(req.key());
    if (!prev.ok()) return prev.status();
    if ((req.ignore_value() || req.ignore_lease()) && !prev->has_value()) {
      return absl::InvalidArgumentError(kErrKeyNotFound);
    }
    const int64_t lease = req.ignore_lease() ? (*prev)->lease() : req.lease();
    if (lease != 0 && !leases_.LeaseExists(lease)) return absl::NotFoundError(kErrLeaseNotFound);

    mvccpb::KeyValue kv;
    kv.set_key(req.key());
    kv.set_value(req.ignore_value() ? (*prev)->value() : req.value());
    kv.set_lease(lease);
    kv.set_mod_revision(group_.txn_revision());
    if (prev->has_value()) {
      kv.set_create_revision((*prev)->create_revision());
      kv.set_version((*prev)->version() + 1);
      if (req.prev_kv()) *resp->mutable_prev_kv() = **prev;
    } else {
      kv.set_create_revision(group_.txn_revision());
      kv.set_version(1);
    }
    group_.Put(std::move(kv), std::move(*prev));
    return absl::OkStatus();
  }

  absl::Status Delete(const etcdserverpb::DeleteRangeRequest& req,
                      etcdserverpb::DeleteRangeResponse* resp) {
    std::vector<mvccpb::KeyValue> doomed;
    auto st = group_.ScanCurrent(KeyRange(req.key(), req.range_end()), [&](mvccpb::KeyValue&& kv) {
      doomed.push_back(std::move(kv));
      return true;
    });
    if (!st.ok()) return st;
    for (auto& kv : doomed) {
      if (req.prev_kv()) *resp->add_prev_kvs() = kv;
      group_.Delete(std::move(kv));
    }
    resp->set_deleted(static_cast<int64_t>(doomed.size()));
    return absl::OkStatus();
  }

  WriteGroup& group_;
  const LeaseView& leases_;
};

void SetNestedRevision(etcdserverpb::TxnResponse* resp, int64_t rev) {
  for (auto& r : *resp->mutable_responses()) {
    switch (r.response_case()) {
      case ResponseOp::kResponseRange: r.mutable_response_range()->mutable_header()->set_revision(rev); break;
      case ResponseOp::kResponsePut: r.mutable_response_put()->mutable_header()->set_revision(rev); break;
      case ResponseOp::kResponseDeleteRange:
        r.mutable_response_delete_range()->mutable_header()->set_revision(rev);
        break;
      case ResponseOp::kResponseTxn:
        r.mutable_response_txn()->mutable_header()->set_revision(rev);
        SetNestedRevision(r.mutable_response_txn(), rev);
        break;
      default: break;
    }
  }
}

}  // namespace

absl::StatusOr<etcdserverpb::TxnResponse> ApplyTxn(WriteGroup& group, const LeaseView& leases,
                                                   const etcdserverpb::TxnRequest& req) {
  etcdserverpb::TxnResponse resp;
  group.BeginTxn();
  Applier applier(group, leases);
  if (auto st = applier.Txn(req, &resp); !st.ok()) {
    group.AbortTxn();
    return st;
  }
  group.EndTxn();
  SetNestedRevision(&resp, group.revision());
  return resp;
}

}  // namespace mkube::store::mvcc
