#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "proto/etcd/rpc.pb.h"
#include "store/mvcc/write_group.h"

namespace mkube::store::mvcc {

// What a write needs to know about leases: whether one exists to attach a key to.
class LeaseView {
 public:
  virtual ~LeaseView() = default;
  virtual bool LeaseExists(int64_t id) const = 0;
};

// Applies one (already validated) txn to the group as one revision: compares, then the
// chosen branch. On error nothing of it stays in the group. Response headers carry only the
// revision, as etcd's nested headers do; the caller fills the outer header.
absl::StatusOr<etcdserverpb::TxnResponse> ApplyTxn(WriteGroup& group, const LeaseView& leases,
                                                   const etcdserverpb::TxnRequest& req);

}  // namespace mkube::store::mvcc
