#include "store/mvcc/write_queue.h"

namespace mkube::store::mvcc {

WriteQueue::Admission WriteQueue::Admit(PendingWrite& pending, bool commit_if_idle) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return Admission::kStopping;
  if (commit_if_idle && writer_idle_ && queue_.empty() && !caller_committing_) {
    caller_committing_ = true;
    return Admission::kCommitHere;
  }
  if (!queue_.empty() && (queue_.size() >= max_requests_ ||
                          queued_bytes_ + pending.bytes > max_bytes_)) {
    return Admission::kFull;
  }
  queued_bytes_ += pending.bytes;
  queue_.push_back(std::move(pending));
  if (writer_idle_) writer_cv_.Signal();
  return Admission::kQueued;
}

void WriteQueue::CallerCommitted() {
  absl::MutexLock lock(&mu_);
  caller_committing_ = false;
  if (!queue_.empty() || stopping_) writer_cv_.Signal();
}

bool WriteQueue::NextGroup(std::vector<PendingWrite>* ops) {
  absl::MutexLock lock(&mu_);
  writer_idle_ = true;
  while (caller_committing_ || (!stopping_ && queue_.empty())) writer_cv_.Wait(&mu_);
  writer_idle_ = false;
  if (queue_.empty()) return false;  // stopping, and everything is committed
  // Exclusive requests commit alone; txns are taken up to the next exclusive one.
  if (queue_.front().exclusive()) {
    queued_bytes_ -= queue_.front().bytes;
    ops->push_back(std::move(queue_.front()));
    queue_.pop_front();
  } else {
    while (!queue_.empty() && !queue_.front().exclusive() && ops->size() < max_group_) {
      queued_bytes_ -= queue_.front().bytes;
      ops->push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  return true;
}

void WriteQueue::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  writer_cv_.SignalAll();
}

}  // namespace mkube::store::mvcc
