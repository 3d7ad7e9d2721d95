#include "store/mvcc/compactor.h"

#include <algorithm>
#include <optional>
#include <string>

#include "base/log.h"
#include "rocksdb/write_batch.h"
#include "store/mvcc/meta.h"

namespace mkube::store::mvcc {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("mvcc");
  return logger;
}

}  // namespace

Compactor::~Compactor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void Compactor::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Compactor::Request(int64_t revision, bool physical, Done done) {
  {
    absl::MutexLock lock(&mu_);
    target_ = std::max(target_, revision);
    if (physical && done_ < revision) {
      physical_waiters_.emplace_back(revision, std::move(done));
      done = nullptr;
    }
  }
  cv_.SignalAll();
  if (done) done(absl::OkStatus());
}

void Compactor::Run() {
  for (;;) {
    int64_t target = 0;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && target_ <= done_) cv_.Wait(&mu_);
      if (stopping_) return;
      target = target_;
    }
    absl::Status st = CompactHistory(target);
    if (!st.ok()) {
      Log().error("compaction to revision {} failed: {}", target, st.ToString());
      // A second before retrying, unless the store stops.
      absl::MutexLock lock(&mu_);
      const absl::Time deadline = absl::Now() + absl::Seconds(1);
      while (!stopping_ && !cv_.WaitWithDeadline(&mu_, deadline)) {
      }
      continue;
    }
    std::vector<Done> done;
    {
      absl::MutexLock lock(&mu_);
      done_ = std::max(done_, target);
      for (auto it = physical_waiters_.begin(); it != physical_waiters_.end();) {
        if (it->first <= done_) {
          done.push_back(std::move(it->second));
          it = physical_waiters_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& d : done) d(absl::OkStatus());
  }
}

absl::Status Compactor::CompactHistory(int64_t target) {
  // The index forgets first (and refuses reads below target from then on); then the
  // versions it forgot leave the database. Losing these deletes in a crash only means
  // redoing them: the index is rebuilt from the database and compaction resumes.
  // Versions a failed attempt left in the database are deleted by the next one.
  std::vector<mvcc::Revision>& removed = unwritten_;
  {
    absl::WriterMutexLock lock(&index_->mu);
    index_->floor = std::max(index_->floor, target);
  }
  // In slices, so that commits and reads are held up for a moment at a time. Keys the
  // writer adds in between have only versions above target: nothing of theirs goes.
  std::optional<std::string> resume;
  for (bool done = false; !done;) {
    absl::WriterMutexLock lock(&index_->mu);
    done = index_->index.Compact(target, &removed, &resume, kCompactBatch);
  }
  std::sort(removed.begin(), removed.end());
  rocksdb::WriteOptions wo;
  rocksdb::WriteBatch batch;
  size_t written = 0;  // removed[0, written) are deleted in the database
  for (size_t i = 0; i < removed.size(); ++i) {
    batch.Delete(families_.history, EncodeRevision(removed[i])).PermitUncheckedError();
    if (batch.Count() >= static_cast<int>(kCompactBatch)) {
      if (auto st = FromRocks(db_->Write(wo, &batch), "compaction write"); !st.ok()) {
        removed.erase(removed.begin(), removed.begin() + static_cast<std::ptrdiff_t>(written));
        return st;
      }
      batch.Clear();
      written = i + 1;
    }
  }
  batch.Put(families_.meta, kMetaCompactDone, Encode64(target)).PermitUncheckedError();
  absl::Status st = FromRocks(db_->Write(wo, &batch), "compaction write");
  if (!st.ok()) {
    removed.erase(removed.begin(), removed.begin() + static_cast<std::ptrdiff_t>(written));
    return st;
  }
  Log().info("compacted history to revision {}: {} versions removed", target, removed.size());
  removed.clear();
  return st;
}

}  // namespace mkube::store::mvcc
