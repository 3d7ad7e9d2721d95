#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "proto/etcd/rpc.pb.h"

// Checks on requests that need no data: done at the edge, before a request is queued.
// Messages are etcd's, since etcd clients match on them.
namespace mkube::store::mvcc {

inline constexpr char kErrEmptyKey[] = "etcdserver: key is not provided";
inline constexpr char kErrKeyNotFound[] = "etcdserver: key not found";
inline constexpr char kErrValueProvided[] = "etcdserver: value is provided";
inline constexpr char kErrLeaseProvided[] = "etcdserver: lease is provided";
inline constexpr char kErrTooManyOps[] = "etcdserver: too many operations in txn request";
inline constexpr char kErrDuplicateKey[] = "etcdserver: duplicate key given in txn request";
inline constexpr char kErrCompacted[] = "etcdserver: mvcc: required revision has been compacted";
inline constexpr char kErrFutureRev[] = "etcdserver: mvcc: required revision is a future revision";
inline constexpr char kErrLeaseNotFound[] = "etcdserver: requested lease not found";
inline constexpr char kErrLeaseExists[] = "etcdserver: lease already exists";
inline constexpr char kErrLeaseTTLTooLarge[] = "etcdserver: too large lease TTL";
inline constexpr char kErrRequestTooLarge[] = "etcdserver: request is too large";
inline constexpr char kErrTooManyRequests[] = "etcdserver: too many requests";

absl::Status ValidateRange(const etcdserverpb::RangeRequest& req);
absl::Status ValidatePut(const etcdserverpb::PutRequest& req);
absl::Status ValidateDeleteRange(const etcdserverpb::DeleteRangeRequest& req);
absl::Status ValidateTxn(const etcdserverpb::TxnRequest& req, size_t max_ops);

}  // namespace mkube::store::mvcc
