#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "proto/etcd/kv.pb.h"
#include "store/mvcc/write_group.h"

namespace mkube::store::mvcc {

// The recent events, kept in memory for watchers (KvStore::ReadEvents); older ones are read
// back from the database. Filled by the committer, read by any thread.
class EventCache {
 public:
  explicit EventCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Every event of a revision at or above `floor` is in the cache (at recovery, with nothing in
  // it: every revision above the store's).
  void SetFloor(int64_t floor) ABSL_LOCKS_EXCLUDED(mu_);
  // A commit's events, after those of every commit before it.
  void Add(EventList&& events) ABSL_LOCKS_EXCLUDED(mu_);
  // As KvStore::ReadEvents, if the cache holds every event from `from` on; nullopt (nothing
  // read) if the database must be read.
  std::optional<int64_t> Read(int64_t from, int64_t to, size_t max_events,
                              std::vector<mvccpb::Event>* out) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t max_bytes_;
  mutable absl::Mutex mu_;
  // A cache, not a queue: bounded by max_bytes_, whole revisions trimmed from the front
  // (readers of older revisions go to the database).
  std::deque<mvccpb::Event> events_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Every event of a revision at or above the floor is in the cache.
  int64_t floor_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mkube::store::mvcc
