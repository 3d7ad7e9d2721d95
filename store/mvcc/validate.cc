#include "store/mvcc/validate.h"

#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/mvcc/key_range.h"

namespace mkube::store::mvcc {
namespace {

using etcdserverpb::RequestOp;

// The keys one branch of a txn writes: puts by key, deletes by interval.
struct Writes {
  std::set<std::string> puts;
  std::vector<KeyRange> dels;
};

absl::Status Duplicate() { return absl::InvalidArgumentError(kErrDuplicateKey); }

bool PutInDels(const std::string& key, const std::vector<KeyRange>& dels) {
  for (const auto& d : dels) {
    if (d.Contains(key)) return true;
  }
  return false;
}

absl::Status CheckBranch(const google::protobuf::RepeatedPtrField<RequestOp>& ops, size_t max_ops,
                         Writes* out);

absl::Status CheckNested(const etcdserverpb::TxnRequest& txn, size_t max_ops, Writes* out) {
  if (txn.compare_size() > static_cast<int>(max_ops) ||
      txn.success_size() > static_cast<int>(max_ops) ||
      txn.failure_size() > static_cast<int>(max_ops)) {
    return absl::InvalidArgumentError(kErrTooManyOps);
  }
  for (const auto& c : txn.compare()) {
    if (c.key().empty()) return absl::InvalidArgumentError(kErrEmptyKey);
  }
  // Only one branch runs, so the two may touch the same keys; the union is what the
  // enclosing branch must not touch again.
  Writes success, failure;
  MKUBE_RETURN_IF_ERROR(CheckBranch(txn.success(), max_ops, &success));
  MKUBE_RETURN_IF_ERROR(CheckBranch(txn.failure(), max_ops, &failure));
  out->puts = std::move(success.puts);
  out->puts.merge(failure.puts);
  out->dels = std::move(success.dels);
  out->dels.insert(out->dels.end(), failure.dels.begin(), failure.dels.end());
  return absl::OkStatus();
}

absl::Status CheckBranch(const google::protobuf::RepeatedPtrField<RequestOp>& ops, size_t max_ops,
                         Writes* out) {
  for (const auto& op : ops) {
    switch (op.request_case()) {
      case RequestOp::kRequestRange:
        MKUBE_RETURN_IF_ERROR(ValidateRange(op.request_range()));
        break;
      case RequestOp::kRequestPut:
        MKUBE_RETURN_IF_ERROR(ValidatePut(op.request_put()));
        if (!out->puts.insert(op.request_put().key()).second) return Duplicate();
        break;
      case RequestOp::kRequestDeleteRange:
        MKUBE_RETURN_IF_ERROR(ValidateDeleteRange(op.request_delete_range()));
        out->dels.emplace_back(op.request_delete_range().key(),
                               op.request_delete_range().range_end());
        break;
      case RequestOp::kRequestTxn: {
        Writes nested;
        MKUBE_RETURN_IF_ERROR(CheckNested(op.request_txn(), max_ops, &nested));
        for (const auto& k : nested.puts) {
          if (!out->puts.insert(k).second || PutInDels(k, out->dels)) return Duplicate();
        }
        for (const auto& k : out->puts) {
          if (!nested.puts.contains(k) && PutInDels(k, nested.dels)) return Duplicate();
        }
        out->dels.insert(out->dels.end(), nested.dels.begin(), nested.dels.end());
        break;
      }
      default:
        return absl::InvalidArgumentError("etcdserver: request op is not set");
    }
  }
  for (const auto& k : out->puts) {
    if (PutInDels(k, out->dels)) return Duplicate();
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRange(const etcdserverpb::RangeRequest& req) {
  if (req.key().empty()) return absl::InvalidArgumentError(kErrEmptyKey);
  return absl::OkStatus();
}

absl::Status ValidatePut(const etcdserverpb::PutRequest& req) {
  if (req.key().empty()) return absl::InvalidArgumentError(kErrEmptyKey);
  if (req.ignore_value() && !req.value().empty()) {
    return absl::InvalidArgumentError(kErrValueProvided);
  }
  if (req.ignore_lease() && req.lease() != 0) return absl::InvalidArgumentError(kErrLeaseProvided);
  return absl::OkStatus();
}

absl::Status ValidateDeleteRange(const etcdserverpb::DeleteRangeRequest& req) {
  if (req.key().empty()) return absl::InvalidArgumentError(kErrEmptyKey);
  return absl::OkStatus();
}

absl::Status ValidateTxn(const etcdserverpb::TxnRequest& req, size_t max_ops) {
  Writes writes;
  return CheckNested(req, max_ops, &writes);
}

}  // namespace mkube::store::mvcc
