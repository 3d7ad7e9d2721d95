#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/etcd/rpc.pb.h"
#include "rocksdb/db.h"
#include "store/mvcc/compactor.h"
#include "store/mvcc/event_cache.h"
#include "store/mvcc/families.h"
#include "store/mvcc/key_index.h"
#include "store/mvcc/txn.h"
#include "store/mvcc/write_group.h"
#include "store/mvcc/write_queue.h"

namespace mkube::store::mvcc {

// A single member is always its own leader, in a term that never changes.
inline constexpr uint64_t kRaftTerm = 2;

struct StoreOptions {
  std::string data_dir;
  // Acknowledge writes only after their WAL is synced. Off only for benchmarks and tests.
  bool sync = true;
  // The most requests one group commit takes.
  size_t max_group_ops = 8192;
  // The writer's queue holds at most this many requests, and this many bytes of txn requests
  // (a request is taken into an empty queue whatever its size). A request beyond either is
  // refused at once with RESOURCE_EXHAUSTED "etcdserver: too many requests", as etcd refuses
  // proposals while its apply lags: the caller pushes back on its client.
  size_t max_queued_requests = 4 * 8192;
  size_t max_queued_bytes = 256 << 20;
  // Recent events kept in memory for watchers; older ones are read back from the database.
  size_t event_cache_bytes = 32 << 20;
  // Memory for RocksDB's memtables, over all column families.
  size_t memtable_bytes = 64 << 20;
  // Optional environment (tests inject faults through it); not owned.
  rocksdb::Env* env = nullptr;
};

// A committed view: a database snapshot and the revision it shows.
struct ReadState {
  ReadState(rocksdb::DB* db, int64_t revision, int64_t compacted)
      : revision(revision), compacted(compacted), snapshot(db->GetSnapshot()), db_(db) {}
  ~ReadState() { db_->ReleaseSnapshot(snapshot); }
  ReadState(const ReadState&) = delete;
  ReadState& operator=(const ReadState&) = delete;

  const int64_t revision;
  const int64_t compacted;
  const rocksdb::Snapshot* const snapshot;

 private:
  rocksdb::DB* db_;
};
using ReadStatePtr = std::shared_ptr<const ReadState>;

// Told of each commit by the thread committing it (the writer thread, or a caller committing a
// lone write), before the writers' callbacks run, one commit at a time.
// Must be quick and must not wait for the store's write path.
class CommitListener {
 public:
  virtual ~CommitListener() = default;
  // The group's events, before anyone else can read them.
  virtual void OnCommit(int64_t revision, const EventList& events) {}
  // The revision is published: Read() and ReadEvents() now include it.
  virtual void OnPublished(int64_t revision) {}
};

// The MVCC key-value store on RocksDB. Reads run on the caller's thread against the latest
// committed snapshot. Writes are queued and never wait: the store's writer thread applies them
// in order and commits them in groups, each group with one WAL sync, then runs the group's
// callbacks. The requests queued during one sync form the next group; the queue is bounded
// (StoreOptions::max_queued_*) and refuses beyond it. One committer at a time: a caller allowed
// to (Txn's commit_if_idle) commits a lone write itself while the writer is idle.
class KvStore {
 public:
  using TxnDone = mvcc::TxnDone;
  using StatusDone = mvcc::StatusDone;
  // Runs inside a group of its own; returns an error to abort it.
  using ExclusiveOp = mvcc::ExclusiveOp;

  static absl::StatusOr<std::unique_ptr<KvStore>> Open(const StoreOptions& options);
  ~KvStore();
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  // Not owned; must outlive the store. Set before the first write.
  void SetLeaseView(const LeaseView* leases) { leases_ = leases; }
  void AddCommitListener(CommitListener* listener);

  ReadStatePtr Read() const ABSL_LOCKS_EXCLUDED(read_mu_);
  int64_t Revision() const { return Read()->revision; }
  int64_t CompactedRevision() const { return Read()->compacted; }

  // With cache_only, reads only what is in memory (memtables and the block cache), never
  // the disk: a read that would need it fails at once with a status IsNotCached tells apart,
  // for an event loop to hand the read to a thread that may wait.
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& req,
                                                    bool cache_only = false) const;

  // Queues a (validated) txn. Put and DeleteRange are single-op txns. With commit_if_idle, a
  // caller that may wait for a sync has the txn committed on its own thread (done runs there
  // before Txn returns) when the writer thread is idle and nothing is queued: a lone write
  // then costs no thread hand-off. A full queue (or a store shutting down) refuses: done runs
  // on the caller's thread before Txn returns.
  void Txn(etcdserverpb::TxnRequest req, TxnDone done, bool commit_if_idle = false);
  // Marks history before `revision` as gone. With physical, done runs once it is deleted.
  void Compact(int64_t revision, bool physical, StatusDone done);
  // Queues a write that must not share its group: leases, store bookkeeping. Refused as Txn is.
  void Exclusive(ExclusiveOp op, StatusDone done);

  // Appends the events with revisions in [from, to] to out, whole revisions only, stopping
  // after the revision where out passes max_events. Returns the last revision read (from-1
  // when none). from must not be below the compacted revision.
  absl::StatusOr<int64_t> ReadEvents(int64_t from, int64_t to, size_t max_events,
                                     std::vector<mvccpb::Event>* out) const;

  // Meta-family reads for components that keep their state in the store (leases).
  absl::Status ScanMeta(std::string_view prefix,
                        const std::function<void(std::string_view, std::string_view)>& visit) const;

  uint64_t cluster_id() const { return cluster_id_; }
  uint64_t member_id() const { return member_id_; }
  uint64_t applied_index() const;
  int64_t DatabaseSize() const;

 private:
  // What the requests of one group answer, before the commit's outcome is known.
  struct GroupResults {
    std::vector<absl::StatusOr<etcdserverpb::TxnResponse>> txns;
    std::vector<absl::Status> exclusives;
  };

  KvStore(const StoreOptions& options);

  // Opening (kv_store_recover.cc).
  absl::Status Recover();
  // Opens the database with every family it has; those of the first format go to legacy.
  absl::Status OpenDatabase(std::vector<std::string>* legacy);
  // The store's cluster and member ids, made up for a new store.
  absl::Status LoadIdentity();
  // Refuses a format newer than this binary's; migrates an older one.
  absl::Status UpgradeFormat(const std::vector<std::string>& legacy);
  // Rewrites a store of the first format (three key families) into the history family.
  absl::Status MigrateFormat1(const std::vector<std::string>& legacy, bool convert);
  absl::Status BuildIndex();

  void Publish(int64_t revision, int64_t compacted) ABSL_LOCKS_EXCLUDED(read_mu_);

  // Writing (kv_store_commit.cc).
  void Submit(PendingWrite pending, bool commit_if_idle = false);
  // The writer thread: commits a group whenever something is queued.
  void WriterLoop();
  // On the writer thread, or on a caller's while the writer waits for it (kCommitHere).
  void CommitGroup(std::vector<PendingWrite> ops) ABSL_LOCKS_EXCLUDED(read_mu_);
  // Applies the requests to the group, one after another.
  GroupResults ApplyGroup(WriteGroup& group, std::vector<PendingWrite>& ops);
  // Writes the group's batch, with the store's revision and applied index, to the database.
  absl::Status WriteGroupBatch(WriteGroup& group, size_t requests);
  // After the group is committed: its versions go to the index, its revision is published
  // and its events go to the listeners and the event cache.
  void PublishGroup(WriteGroup& group) ABSL_LOCKS_EXCLUDED(read_mu_);
  // The callbacks, in request order, with the commit's error if it failed.
  void AnswerGroup(std::vector<PendingWrite>& ops, const absl::Status& commit,
                   GroupResults& results);

  absl::Status ReadEventsFromDb(const ReadState& state, int64_t from, int64_t to,
                                size_t max_events, std::vector<mvccpb::Event>* out,
                                int64_t* last) const;

  StoreOptions options_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  Families families_;
  SharedIndex index_;
  const LeaseView* leases_ = nullptr;
  uint64_t cluster_id_ = 0;
  uint64_t member_id_ = 0;

  mutable absl::Mutex read_mu_;
  ReadStatePtr read_state_ ABSL_GUARDED_BY(read_mu_);

  WriteQueue queue_;

  // Committer state: touched only by whoever commits (the writer thread, or a caller while
  // the queue keeps the writer waiting; its mutex orders the hand-overs), and by Recover
  // before either starts.
  int64_t next_base_revision_ = 0;
  int64_t compacted_ = 0;
  uint64_t applied_index_value_ = 0;
  bool write_failed_ = false;
  std::atomic<uint64_t> applied_index_{0};  // written by the committer, read by anyone
  // Set up before the first write, then only read by the committer.
  std::vector<CommitListener*> listeners_;

  EventCache events_;
  // Made by Recover, once the database is open.
  std::unique_ptr<Compactor> compactor_;

  std::thread writer_;
};
using KvStorePtr = std::unique_ptr<KvStore>;

}  // namespace mkube::store::mvcc
