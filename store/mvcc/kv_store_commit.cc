// Writing: requests queued toward the writer thread, committed in groups.
#include "store/mvcc/kv_store.h"

#include <variant>

#include "base/log.h"
#include "base/metrics.h"
#include "fmt/format.h"
#include "store/mvcc/meta.h"
#include "store/mvcc/validate.h"

namespace mkube::store::mvcc {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("mvcc");
  return logger;
}

}  // namespace

void KvStore::Txn(etcdserverpb::TxnRequest req, TxnDone done, bool commit_if_idle) {
  const size_t bytes = req.ByteSizeLong();
  Submit(PendingWrite{PendingWrite::TxnOp{std::move(req), std::move(done)}, bytes},
         commit_if_idle);
}

void KvStore::Exclusive(ExclusiveOp op, StatusDone done) {
  Submit(PendingWrite{PendingWrite::Exclusive{std::move(op), std::move(done)}});
}

void KvStore::Submit(PendingWrite pending, bool commit_if_idle) {
  switch (queue_.Admit(pending, commit_if_idle)) {
    case WriteQueue::Admission::kQueued:
      return;
    case WriteQueue::Admission::kCommitHere: {
      // The writer is waiting and stays so until this group is done (and answered).
      std::vector<PendingWrite> ops;
      ops.push_back(std::move(pending));
      CommitGroup(std::move(ops));
      queue_.CallerCommitted();
      return;
    }
    case WriteQueue::Admission::kStopping:
      pending.Refuse(absl::UnavailableError("mkube-store: shutting down"));
      return;
    case WriteQueue::Admission::kFull:
      pending.Refuse(absl::ResourceExhaustedError(kErrTooManyRequests));
      return;
  }
}

void KvStore::Compact(int64_t revision, bool physical, StatusDone done) {
  Exclusive(
      [this, revision](WriteGroup& group) -> absl::Status {
        if (revision <= compacted_) return absl::OutOfRangeError(kErrCompacted);
        if (revision > group.revision()) return absl::OutOfRangeError(kErrFutureRev);
        group.PutMeta(kMetaCompacted, Encode64(revision));
        compacted_ = revision;
        return absl::OkStatus();
      },
      [this, revision, physical, done = std::move(done)](absl::Status st) mutable {
        if (!st.ok()) {
          done(st);
          return;
        }
        compactor_->Request(revision, physical, std::move(done));
      });
}

void KvStore::WriterLoop() {
  for (;;) {
    std::vector<PendingWrite> ops;
    if (!queue_.NextGroup(&ops)) return;
    CommitGroup(std::move(ops));
  }
}

void KvStore::CommitGroup(std::vector<PendingWrite> ops) {
  const int64_t compacted_before = compacted_;
  // The state the last commit published: every committed version is in its snapshot.
  const ReadStatePtr view = Read();
  WriteGroup group(db_.get(), families_, index_, next_base_revision_, view->snapshot);
  GroupResults results = ApplyGroup(group, ops);
  applied_index_value_ += ops.size();

  absl::Status commit = absl::OkStatus();
  const int64_t final_revision = group.revision();
  if (!group.empty()) {
    commit = WriteGroupBatch(group, ops.size());
    if (!commit.ok()) compacted_ = compacted_before;
  }
  // Revision numbers of a failed group are never reused: they may sit in the WAL.
  next_base_revision_ = final_revision;
  if (commit.ok()) {
    applied_index_ = applied_index_value_;
    if (!group.empty()) PublishGroup(group);
  }
  AnswerGroup(ops, commit, results);
}

KvStore::GroupResults KvStore::ApplyGroup(WriteGroup& group, std::vector<PendingWrite>& ops) {
  GroupResults results;
  results.txns.reserve(ops.size());
  for (auto& p : ops) {
    if (auto* t = std::get_if<PendingWrite::TxnOp>(&p.op)) {
      auto r = ApplyTxn(group, *leases_, t->req);
      if (r.ok()) r->mutable_header()->set_revision(group.revision());
      results.txns.push_back(std::move(r));
    } else {
      auto& e = std::get<PendingWrite::Exclusive>(p.op);
      group.BeginTxn();
      absl::Status st = e.op(group);
      if (st.ok()) {
        group.EndTxn();
      } else {
        group.AbortTxn();
      }
      results.exclusives.push_back(st);
    }
  }
  return results;
}

absl::Status KvStore::WriteGroupBatch(WriteGroup& group, size_t requests) {
  const int64_t final_revision = group.revision();
  group.PutMeta(kMetaRevision, Encode64(final_revision));
  group.PutMeta(kMetaAppliedIndex, Encode64(static_cast<int64_t>(applied_index_value_)));
  // After a failed write the WAL is not touched again until RocksDB says it recovered:
  // it resumes by itself after retryable errors (a full disk), never after others (a
  // failed sync leaves the WAL in doubt; a restart recovers from what it really holds).
  if (write_failed_) {
    rocksdb::Status resumed = db_->Resume();
    if (resumed.ok()) {
      write_failed_ = false;
      Log().info("storage recovered; accepting writes again");
    } else {
      return absl::UnavailableError(fmt::format(
          "mkube-store: storage failed and has not recovered ({}); writes are refused",
          resumed.ToString()));
    }
  }
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  const absl::Time began = absl::Now();
  absl::Status commit = FromRocks(db_->Write(wo, group.batch()), "write failed");
  // The write and its WAL sync are one call here: etcd's fsync and commit figures both.
  static metrics::Histogram& fsync =
      metrics::Registry::Default()
          .AddHistogram("etcd_disk_wal_fsync_duration_seconds",
                        "The latency distributions of fsync called by WAL.", {},
                        metrics::ExponentialBuckets(0.001, 2, 14))
          .With();
  fsync.Observe(absl::ToDoubleSeconds(absl::Now() - began));
  if (!commit.ok()) {
    Log().error("group commit of {} requests (revision {}) failed: {}", requests,
                final_revision, commit.ToString());
    write_failed_ = true;
  }
  return commit;
}

void KvStore::PublishGroup(WriteGroup& group) {
  const int64_t final_revision = group.revision();
  {
    absl::WriterMutexLock lock(&index_.mu);
    // Taken here, under the lock the visit runs in (the analysis does not see into it).
    KeyIndex* index = &index_.index;
    group.VisitVersions(
        [index](const std::string& key, const IndexedVersion& v) { index->Add(key, v); });
  }
  Publish(final_revision, compacted_);
  if (!group.events().empty()) {
    for (auto* l : listeners_) l->OnCommit(final_revision, group.events());
    events_.Add(std::move(group.events()));
    for (auto* l : listeners_) l->OnPublished(final_revision);
  }
}

void KvStore::AnswerGroup(std::vector<PendingWrite>& ops, const absl::Status& commit,
                          GroupResults& results) {
  for (auto& r : results.txns) {
    if (r.ok() && !commit.ok()) r = commit;
    if (r.ok()) {
      auto* h = r->mutable_header();
      h->set_cluster_id(cluster_id_);
      h->set_member_id(member_id_);
      h->set_raft_term(kRaftTerm);
    }
  }
  for (auto& st : results.exclusives) {
    if (st.ok() && !commit.ok()) st = commit;
  }
  // The callbacks, in request order.
  size_t ti = 0, ei = 0;
  for (auto& p : ops) {
    if (auto* t = std::get_if<PendingWrite::TxnOp>(&p.op)) {
      t->done(std::move(results.txns[ti++]));
    } else {
      std::get<PendingWrite::Exclusive>(p.op).done(std::move(results.exclusives[ei++]));
    }
  }
}

}  // namespace mkube::store::mvcc
