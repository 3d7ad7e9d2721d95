#pragma once

#include <cstddef>
#include <string>

#include "base/executor.h"
#include "proto/etcd/rpc.pb.h"
#include "store/lease/lessor.h"
#include "store/mvcc/kv_store.h"
#include "store/watch/watch_hub.h"

namespace mkube::store::server {

// What the gRPC services share. Not owned.
struct ServiceContext {
  mvcc::KvStore* store = nullptr;
  lease::Lessor* lessor = nullptr;
  watch::WatchHub* hub = nullptr;
  // Where reads that may wait for the disk run, off the event loops.
  Executor* readers = nullptr;
  size_t max_request_bytes = 0;
  size_t max_txn_ops = 128;
  std::string name;
  std::string client_url;

  // A response header at the store's current revision.
  void FillHeader(etcdserverpb::ResponseHeader* h) const {
    h->set_cluster_id(store->cluster_id());
    h->set_member_id(store->member_id());
    h->set_raft_term(mvcc::kRaftTerm);
    h->set_revision(store->Revision());
  }
};

}  // namespace mkube::store::server
