#pragma once

#include <cstddef>
#include <deque>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/etcd/rpc.pb.h"
#include "store/mvcc/write_group.h"

namespace mkube::store::mvcc {

using TxnDone = absl::AnyInvocable<void(absl::StatusOr<etcdserverpb::TxnResponse>)>;
using StatusDone = absl::AnyInvocable<void(absl::Status)>;
// Runs inside a group of its own; returns an error to abort it.
using ExclusiveOp = absl::AnyInvocable<absl::Status(WriteGroup&)>;

// A write waiting for its group commit.
struct PendingWrite {
  struct TxnOp {
    etcdserverpb::TxnRequest req;
    TxnDone done;
  };
  struct Exclusive {
    ExclusiveOp op;
    StatusDone done;
  };
  std::variant<TxnOp, Exclusive> op;
  // What it counts against StoreOptions::max_queued_bytes: a txn's request.
  size_t bytes = 0;
  bool exclusive() const { return std::holds_alternative<Exclusive>(op); }
  // Answers without committing.
  void Refuse(const absl::Status& status) {
    if (auto* t = std::get_if<TxnOp>(&op)) {
      t->done(status);
    } else {
      std::get<Exclusive>(op).done(status);
    }
  }
};

// The writes toward the store's writer thread, and who commits them: the writer takes them in
// groups, or a caller allowed to commits a lone write on its own thread while the writer is
// idle and nothing is queued. One committer at a time: the writer waits while a caller commits.
class WriteQueue {
 public:
  // Bounded by max_requests and max_bytes (StoreOptions::max_queued_*); a group takes at most
  // max_group requests.
  WriteQueue(size_t max_requests, size_t max_bytes, size_t max_group)
      : max_requests_(max_requests), max_bytes_(max_bytes), max_group_(max_group) {}

  enum class Admission {
    kQueued,      // pending is in the queue (moved from)
    kCommitHere,  // the caller commits pending itself, then calls CallerCommitted
    kStopping,    // refused: the store is shutting down
    kFull,        // refused: the queue is full
  };
  // Takes pending into the queue, unless it is refused or (commit_if_idle) committed by the
  // caller: those leave it to the caller. A request is taken into an empty queue whatever its
  // size.
  Admission Admit(PendingWrite& pending, bool commit_if_idle) ABSL_LOCKS_EXCLUDED(mu_);
  // After kCommitHere: the caller's group is committed and answered.
  void CallerCommitted() ABSL_LOCKS_EXCLUDED(mu_);
  // The writer thread: waits for the next group and appends it to ops; false once the queue
  // is stopped and everything is committed.
  bool NextGroup(std::vector<PendingWrite>* ops) ABSL_LOCKS_EXCLUDED(mu_);
  // New writes are refused; NextGroup still hands out what was queued.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t max_requests_;
  const size_t max_bytes_;
  const size_t max_group_;

  absl::Mutex mu_;
  // Toward the writer thread. Bounded by max_requests_ and max_bytes_: Admit refuses a request
  // beyond them (kFull: the store answers it RESOURCE_EXHAUSTED at once).
  std::deque<PendingWrite> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar writer_cv_;
  bool writer_idle_ ABSL_GUARDED_BY(mu_) = false;
  // A caller is committing a group on its own thread: the writer waits for it.
  bool caller_committing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mkube::store::mvcc
