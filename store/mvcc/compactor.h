#pragma once

#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/db.h"
#include "store/mvcc/codec.h"
#include "store/mvcc/families.h"
#include "store/mvcc/key_index.h"

namespace mkube::store::mvcc {

// The store's compactor thread: removes the history below a compaction's revision once the
// compaction is committed. The index forgets it first, then it leaves the database in batches,
// the progress persisted (kMetaCompactDone) so that a restart resumes it.
class Compactor {
 public:
  using Done = absl::AnyInvocable<void(absl::Status)>;

  // target: compaction requested up to; done: finished up to (as the store recovered them).
  // db, families and index must outlive the compactor.
  Compactor(rocksdb::DB* db, const Families& families, SharedIndex* index, int64_t target,
            int64_t done)
      : db_(db), families_(families), index_(index), target_(target), done_(done) {}
  // Stops the thread; what is left to delete is deleted after the next start.
  ~Compactor() ABSL_LOCKS_EXCLUDED(mu_);
  Compactor(const Compactor&) = delete;
  Compactor& operator=(const Compactor&) = delete;

  void Start();
  // A committed compaction to `revision`: the history before it goes. With physical, done
  // runs once it is deleted (on the compactor's thread), else at once.
  void Request(int64_t revision, bool physical, Done done) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CompactHistory(int64_t revision);

  rocksdb::DB* const db_;
  const Families families_;
  SharedIndex* const index_;

  absl::Mutex mu_;
  absl::CondVar cv_;
  // The compactor's work is one target (requests coalesce into the highest), not a queue.
  int64_t target_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  // Compact(physical) calls waiting for the deletion: one per such call admitted by the
  // writer's queue and not yet answered.
  std::vector<std::pair<int64_t, Done>> physical_waiters_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Versions the index has forgotten whose deletion is not written yet (compactor thread).
  std::vector<mvcc::Revision> unwritten_;

  std::thread thread_;
};

}  // namespace mkube::store::mvcc
