#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/etcd/rpc.pb.h"

namespace mkube::apiserver::storage {

// One watch on the storage: its responses, in the order the storage sends them, read by one
// thread. The first is the `created` one; then events in revision order (the events of one
// revision in one response); a `canceled` one (with compact_revision when the history asked
// for is compacted away) ends it. Destroying it ends the watch.
class WatchStream {
 public:
  virtual ~WatchStream() = default;

  // Waits for the next response; false once the watch has ended (cancelled, past its
  // deadline, or the storage gone). The watch starts with the first Read.
  virtual bool Read(etcdserverpb::WatchResponse* response) = 0;
  // Ends the watch from any thread, before or during a Read (which then returns false). It
  // only flags the watch, calling out to nothing: it may be called under the caller's locks.
  virtual void Cancel() = 0;
};
using WatchStreamPtr = std::unique_ptr<WatchStream>;

// What the apiserver stores its objects in: a key-value store with etcd v3's model, spoken in
// its messages. Every write makes a new revision of the whole store; a transaction compares
// keys' revisions and values and writes or reads at one revision; a watch sends the events
// of a key range from a revision on; compaction drops the history before a revision (a watch
// from before it is cancelled with the compacted revision, and compacting there again is
// refused as etcd refuses it: OUT_OF_RANGE "etcdserver: mvcc: required revision has been
// compacted").
class Storage {
 public:
  // Where an answer goes when it is not waited for: called once, on the caller's thread or on
  // another (the implementation's), with none of the storage's locks held. It must not block.
  template <typename Resp>
  using Done = std::function<void(absl::StatusOr<Resp>)>;

  virtual ~Storage() = default;

  // The key, at the current revision (no kvs when there is none).
  virtual absl::StatusOr<etcdserverpb::RangeResponse> Get(const std::string& key) = 0;
  virtual void GetAsync(const std::string& key, Done<etcdserverpb::RangeResponse> done) = 0;
  // Every key under prefix, in key order, at one revision; at most `limit` (0: all).
  virtual absl::StatusOr<etcdserverpb::RangeResponse> List(const std::string& prefix,
                                                           int64_t limit = 0) = 0;
  virtual absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& req) = 0;
  virtual void TxnAsync(etcdserverpb::TxnRequest req, Done<etcdserverpb::TxnResponse> done) = 0;
  // A watch as `create` asks for it (key or range, start revision, prev_kv), ended by the
  // storage after `timeout`.
  virtual WatchStreamPtr Watch(etcdserverpb::WatchCreateRequest create,
                               absl::Duration timeout = absl::InfiniteDuration()) = 0;
  // Drops the history before revision (the state at it is kept).
  virtual absl::Status Compact(int64_t revision) = 0;
};

}  // namespace mkube::apiserver::storage
