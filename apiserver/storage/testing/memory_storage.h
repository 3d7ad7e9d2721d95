#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "apiserver/storage/storage.h"

namespace mkube::apiserver::storage::testing {

// The storage in this process's memory, for tests: etcd's model as the apiserver uses it, in
// the store's words. One revision counter for the whole store, starting at 1 and bumped once
// by each transaction that writes; compare-and-swap transactions (version, create, mod and
// value compares; puts, ranges and deletes); watches of a key or a range from any revision
// not compacted away, with the events of a revision together and revisions in order; and
// compaction, refused as etcd refuses it. Leases, nested transactions, reads of past
// revisions, and watches' filters, progress notifications and fragments are not kept.
//
// Answers to the Async calls are given on the caller's thread, before the call returns. A
// watch's responses are read from the store's own history, so a watch that reads slowly
// holds up no writer; a watch left behind by compaction is cancelled with the compacted
// revision, as etcd cancels it.
class MemoryStorage final : public Storage {
 public:
  // Transactions larger than max_request_bytes are refused, as mkube-store refuses them
  // (RESOURCE_EXHAUSTED "etcdserver: request is too large"); its default is the store's.
  explicit MemoryStorage(size_t max_request_bytes = 1536 * 1024);
  ~MemoryStorage() override;
  MemoryStorage(const MemoryStorage&) = delete;
  MemoryStorage& operator=(const MemoryStorage&) = delete;

  absl::StatusOr<etcdserverpb::RangeResponse> Get(const std::string& key) override;
  void GetAsync(const std::string& key, Done<etcdserverpb::RangeResponse> done) override;
  absl::StatusOr<etcdserverpb::RangeResponse> List(const std::string& prefix,
                                                   int64_t limit = 0) override;
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& req) override;
  void TxnAsync(etcdserverpb::TxnRequest req, Done<etcdserverpb::TxnResponse> done) override;
  WatchStreamPtr Watch(etcdserverpb::WatchCreateRequest create,
                       absl::Duration timeout = absl::InfiniteDuration()) override;
  absl::Status Compact(int64_t revision) override;

 private:
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& req);

  // The keys, their history and the revisions, shared with the watches (which may outlive
  // the storage: they then end).
  struct State;
  class MemoryWatch;
  std::shared_ptr<State> state_;
};

}  // namespace mkube::apiserver::storage::testing
