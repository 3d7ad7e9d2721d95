#include "store/mvcc/kv_store.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <variant>

#include "api/log.h"
#include "fmt/format.h"
#include "rocksdb/options.h"
#include "rocksdb/write_buffer_manager.h"
#include "rocksdb/table.h"
#include "store/mvcc/codec.h"
#include "store/mvcc/meta.h"
#include "store/mvcc/validate.h"

namespace mkube::store::mvcc {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("mvcc");
  return logger;
}

const char* const kLegacyFamilies[] = {"rev", "key", "cur"};

}  // namespace

struct KvStore::Pending {
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

KvStore::KvStore(const StoreOptions& options)
    : options_(options), events_(options.event_cache_bytes) {}

absl::StatusOr<std::unique_ptr<KvStore>> KvStore::Open(const StoreOptions& options) {
  if (options.data_dir.empty()) return absl::InvalidArgumentError("--data-dir is required");
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        fmt::format("cannot create data dir {}: {}", options.data_dir, ec.message()));
  }
  std::unique_ptr<KvStore> store(new KvStore(options));
  if (auto st = store->Recover(); !st.ok()) return st;
  store->compactor_->Start();
  store->writer_ = std::thread([s = store.get()] { s->WriterLoop(); });
  return store;
}

absl::Status KvStore::Recover() {
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.max_background_jobs = 2;
  // All families' memtables share one budget; the one holding most is flushed first.
  db_options.write_buffer_manager =
      std::make_shared<rocksdb::WriteBufferManager>(options_.memtable_bytes);
  db_options.keep_log_file_num = 4;
  // Reusing WAL files lets a sync skip the file-size metadata update.
  db_options.recycle_log_file_num = 4;
  db_options.bgerror_resume_retry_interval = 200 * 1000;  // microseconds
  if (options_.env) db_options.env = options_.env;


  rocksdb::ColumnFamilyOptions cf_options;
  cf_options.write_buffer_size = options_.memtable_bytes / 2;

  // Every existing family must be opened; those of the first format are migrated below.
  std::vector<std::string> existing, legacy;
  if (!rocksdb::DB::ListColumnFamilies(db_options, options_.data_dir, &existing).ok()) {
    existing.clear();  // a new store
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
      {rocksdb::kDefaultColumnFamilyName, cf_options},
      {"history", cf_options},
      {"meta", cf_options}};
  for (const char* name : kLegacyFamilies) {
    if (std::find(existing.begin(), existing.end(), name) != existing.end()) {
      legacy.push_back(name);
      descriptors.push_back({name, cf_options});
    }
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::Open(db_options, options_.data_dir, descriptors, &handles_, &raw);
  if (!s.ok()) {
    return absl::FailedPreconditionError(
        fmt::format("cannot open store in {}: {}", options_.data_dir, s.ToString()));
  }
  db_.reset(raw);
  families_ = {handles_[1], handles_[2]};

  auto read64 = [&](const char* key, int64_t fallback) -> absl::StatusOr<int64_t> {
    std::string v;
    rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), families_.meta, key, &v);
    if (rs.IsNotFound()) return fallback;
    if (!rs.ok()) return FromRocks(rs, "read meta");
    if (v.size() != 8) return absl::DataLossError(fmt::format("corrupt meta record {}", key));
    return static_cast<int64_t>(ReadBigEndian64(v));
  };

  std::string identity;
  s = db_->Get(rocksdb::ReadOptions(), families_.meta, kMetaIdentity, &identity);
  if (s.IsNotFound()) {
    std::random_device rd;
    std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
    cluster_id_ = rng();
    member_id_ = rng();
    identity.clear();
    AppendBigEndian64(&identity, cluster_id_);
    AppendBigEndian64(&identity, member_id_);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = db_->Put(wo, families_.meta, kMetaIdentity, identity);
    if (!s.ok()) return FromRocks(s, "write identity");
  } else if (s.ok() && identity.size() == 16) {
    cluster_id_ = ReadBigEndian64(identity);
    member_id_ = ReadBigEndian64(identity.substr(8));
  } else {
    return absl::DataLossError("mkube-store: corrupt identity record");
  }

  auto format = read64(kMetaFormat, 0);
  if (!format.ok()) return format.status();
  if (*format > kFormat) {
    return absl::FailedPreconditionError(fmt::format(
        "the store in {} has format {}, newer than this mkube-store reads ({})",
        options_.data_dir, *format, kFormat));
  }
  if (!legacy.empty() || *format == 0) {
    // A new store only gets its format record; a migration that was cut short after its
    // format record only has families to drop.
    if (auto st = MigrateFormat1(legacy, *format == 0); !st.ok()) return st;
  }

  auto revision = read64(kMetaRevision, 1);
  if (!revision.ok()) return revision.status();
  auto compacted = read64(kMetaCompacted, 0);
  if (!compacted.ok()) return compacted.status();
  auto compact_done = read64(kMetaCompactDone, 0);
  if (!compact_done.ok()) return compact_done.status();
  auto applied = read64(kMetaAppliedIndex, 0);
  if (!applied.ok()) return applied.status();
  {
    absl::WriterMutexLock lock(&index_.mu);
    index_.floor = *compacted;
  }
  if (auto st = BuildIndex(); !st.ok()) return st;

  next_base_revision_ = *revision;
  compacted_ = *compacted;
  applied_index_value_ = static_cast<uint64_t>(*applied);
  applied_index_ = applied_index_value_;
  compactor_ = std::make_unique<Compactor>(db_.get(), families_, &index_, *compacted,
                                           *compact_done);
  events_.SetFloor(*revision + 1);
  Publish(*revision, *compacted);
  size_t keys = 0;
  {
    absl::ReaderMutexLock lock(&index_.mu);
    keys = index_.index.key_count();
  }
  Log().info("store recovered in {}: revision {}, compacted {}, {} keys", options_.data_dir,
             *revision, *compacted, keys);
  return absl::OkStatus();
}

absl::Status KvStore::BuildIndex() {
  // Built from the database without the lock, then installed under it.
  KeyIndex index;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), families_.history));
  mvccpb::KeyValue kv;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto rev = DecodeRevision(it->key().ToStringView());
    bool deleted = false;
    if (!rev || !DecodeHistory(*rev, it->value().ToStringView(), &kv, &deleted)) {
      return absl::DataLossError("mkube-store: corrupt history entry");
    }
    index.Add(kv.key(), IndexEntry(*rev, deleted ? nullptr : &kv));
  }
  if (auto st = FromRocks(it->status(), "read history"); !st.ok()) return st;
  absl::WriterMutexLock lock(&index_.mu);
  index_.index = std::move(index);
  return absl::OkStatus();
}

absl::Status KvStore::MigrateFormat1(const std::vector<std::string>& legacy, bool convert) {
  auto handle = [&](std::string_view name) -> rocksdb::ColumnFamilyHandle* {
    for (auto* h : handles_) {
      if (h->GetName() == name) return h;
    }
    return nullptr;
  };
  rocksdb::WriteOptions wo;
  rocksdb::WriteBatch batch;
  auto* rev_family = handle("rev");
  auto* key_family = handle("key");
  if (convert && rev_family && key_family) {
    Log().info("migrating the store in {} to format {}", options_.data_dir, kFormat);
    // Where each version sat in its revision. Compaction had removed the revision entries
    // of old versions it kept; those get sub-revisions of their own, above any real one.
    std::map<std::pair<int64_t, std::string>, int64_t> subs;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), rev_family));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      auto rev = DecodeRevision(it->key().ToStringView());
      std::string_view v = it->value().ToStringView();
      if (!rev || v.empty()) return absl::DataLossError("mkube-store: corrupt revision entry");
      subs[{rev->main, std::string(v.substr(1))}] = rev->sub;
    }
    if (auto st = FromRocks(it->status(), "read revisions"); !st.ok()) return st;
    std::map<int64_t, int64_t> synthetic;
    size_t migrated = 0;
    it.reset(db_->NewIterator(rocksdb::ReadOptions(), key_family));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      auto entry = DecodeKeyEntry(it->key().ToStringView());
      std::string_view v = it->value().ToStringView();
      if (!entry || v.empty()) return absl::DataLossError("mkube-store: corrupt history entry");
      mvcc::Revision rev{entry->main, 0};
      if (auto s = subs.find({entry->main, entry->user_key}); s != subs.end()) {
        rev.sub = s->second;
      } else {
        rev.sub = (int64_t{1} << 32) + synthetic[entry->main]++;
      }
      std::string stored;
      if (v[0] == static_cast<char>(EntryType::kTombstone)) {
        stored = EncodeHistoryDelete(entry->user_key);
      } else {
        mvccpb::KeyValue kv;
        if (!kv.ParseFromArray(v.data() + 1, static_cast<int>(v.size() - 1))) {
          return absl::DataLossError("mkube-store: corrupt history entry");
        }
        kv.set_key(entry->user_key);
        AppendHistoryPut(&stored, kv);
      }
      batch.Put(families_.history, EncodeRevision(rev), stored).PermitUncheckedError();
      ++migrated;
      if (batch.Count() >= static_cast<int>(kCompactBatch)) {
        if (auto st = FromRocks(db_->Write(wo, &batch), "migration write"); !st.ok()) return st;
        batch.Clear();
      }
    }
    if (auto st = FromRocks(it->status(), "read history"); !st.ok()) return st;
    Log().info("migrated {} versions", migrated);
  }
  // The format record commits the migration; the old families go only after it is synced.
  batch.Put(families_.meta, kMetaFormat, Encode64(kFormat)).PermitUncheckedError();
  wo.sync = true;
  if (auto st = FromRocks(db_->Write(wo, &batch), "migration write"); !st.ok()) return st;
  for (const auto& name : legacy) {
    auto* h = handle(name);
    if (auto st = FromRocks(db_->DropColumnFamily(h), "drop family " + name); !st.ok()) return st;
    db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    handles_.erase(std::find(handles_.begin(), handles_.end(), h));
  }
  return absl::OkStatus();
}

KvStore::~KvStore() {
  {
    // New writes are refused; the writer commits and answers what was queued, then ends.
    absl::MutexLock lock(&queue_mu_);
    stopping_ = true;
  }
  writer_cv_.SignalAll();
  if (writer_.joinable()) writer_.join();
  compactor_.reset();
  ReadStatePtr last;
  {
    absl::MutexLock lock(&read_mu_);
    last = std::move(read_state_);
  }
  last.reset();  // releases its snapshot, outside the lock
  if (db_) {
    // Synced writes are on disk already; without sync, a clean stop still syncs the tail.
    if (!options_.sync && !write_failed_) db_->FlushWAL(true).PermitUncheckedError();
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    db_->Close().PermitUncheckedError();
  }
}

void KvStore::AddCommitListener(CommitListener* listener) { listeners_.push_back(listener); }

ReadStatePtr KvStore::Read() const {
  absl::MutexLock lock(&read_mu_);
  return read_state_;
}

void KvStore::Publish(int64_t revision, int64_t compacted) {
  ReadStatePtr state = std::make_shared<const ReadState>(db_.get(), revision, compacted);
  {
    absl::MutexLock lock(&read_mu_);
    read_state_.swap(state);
  }
  // The previous state, if no reader holds it any more, releases its RocksDB snapshot here:
  // outside the lock every read takes.
}

uint64_t KvStore::applied_index() const { return applied_index_.load(); }

int64_t KvStore::DatabaseSize() const {
  uint64_t sst = 0, mem = 0, wal = 0;
  for (auto* h : handles_) {
    uint64_t v = 0;
    if (db_->GetIntProperty(h, "rocksdb.total-sst-files-size", &v)) sst += v;
    if (db_->GetIntProperty(h, "rocksdb.cur-size-all-mem-tables", &v)) mem += v;
  }
  db_->GetIntProperty("rocksdb.live-wal-files-size", &wal);
  return static_cast<int64_t>(sst + std::max(mem, wal));
}

absl::StatusOr<etcdserverpb::RangeResponse> KvStore::Range(const etcdserverpb::RangeRequest& req,
                                                           bool cache_only) const {
  ReadStatePtr state = Read();
  etcdserverpb::RangeResponse resp;
  resp.mutable_header()->set_revision(state->revision);
  const int64_t rev = req.revision() > 0 ? req.revision() : state->revision;
  if (rev > state->revision) return absl::OutOfRangeError(kErrFutureRev);
  if (rev < state->compacted) return absl::OutOfRangeError(kErrCompacted);
  KeyRange range(req.key(), req.range_end());
  std::vector<Found> candidates;
  auto add = [&](Found&& f) { candidates.push_back(std::move(f)); };
  if (auto st = FindInIndex(index_, range, rev, add); !st.ok()) {
    return st;
  }
  // The snapshot holds every version the index named at rev: compaction removes only
  // versions below its floor, and the snapshot is older than any such removal.
  rocksdb::ReadOptions ro;
  ro.snapshot = state->snapshot;
  if (cache_only) ro.read_tier = rocksdb::kBlockCacheTier;
  auto load = [&](const std::vector<Found*>& found) {
    return LoadValues(db_.get(), families_.history, ro, found,
                      absl::DataLossError("mkube-store: a version named by the index is missing"));
  };
  if (auto st = EvaluateRange(req, std::move(candidates), load, &resp); !st.ok()) return st;
  return resp;
}

void KvStore::Txn(etcdserverpb::TxnRequest req, TxnDone done, bool commit_if_idle) {
  const size_t bytes = req.ByteSizeLong();
  Submit(Pending{Pending::TxnOp{std::move(req), std::move(done)}, bytes}, commit_if_idle);
}

void KvStore::Exclusive(ExclusiveOp op, StatusDone done) {
  Submit(Pending{Pending::Exclusive{std::move(op), std::move(done)}});
}

void KvStore::Submit(Pending pending, bool commit_if_idle) {
  enum { kCommitHere, kGone, kFull } outcome;
  {
    absl::MutexLock lock(&queue_mu_);
    if (stopping_) {
      outcome = kGone;
    } else if (commit_if_idle && writer_idle_ && queue_.empty() && !caller_committing_) {
      caller_committing_ = true;
      outcome = kCommitHere;
    } else if (!queue_.empty() && (queue_.size() >= options_.max_queued_requests ||
                                   queued_bytes_ + pending.bytes > options_.max_queued_bytes)) {
      outcome = kFull;
    } else {
      queued_bytes_ += pending.bytes;
      queue_.push_back(std::move(pending));
      if (writer_idle_) writer_cv_.Signal();
      return;
    }
  }
  switch (outcome) {
    case kCommitHere: {
      // The writer is waiting and stays so until this group is done (and answered).
      std::vector<Pending> ops;
      ops.push_back(std::move(pending));
      CommitGroup(std::move(ops));
      absl::MutexLock lock(&queue_mu_);
      caller_committing_ = false;
      if (!queue_.empty() || stopping_) writer_cv_.Signal();
      return;
    }
    case kGone:
      pending.Refuse(absl::UnavailableError("mkube-store: shutting down"));
      return;
    case kFull:
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

void KvStore::CommitGroup(std::vector<Pending> ops) {
  const int64_t compacted_before = compacted_;
  // The state the last commit published: every committed version is in its snapshot.
  const ReadStatePtr view = Read();
  WriteGroup group(db_.get(), families_, index_, next_base_revision_, view->snapshot);
  std::vector<absl::StatusOr<etcdserverpb::TxnResponse>> txn_results;
  std::vector<absl::Status> exclusive_results;
  txn_results.reserve(ops.size());
  for (auto& p : ops) {
    if (auto* t = std::get_if<Pending::TxnOp>(&p.op)) {
      auto r = ApplyTxn(group, *leases_, t->req);
      if (r.ok()) r->mutable_header()->set_revision(group.revision());
      txn_results.push_back(std::move(r));
    } else {
      auto& e = std::get<Pending::Exclusive>(p.op);
      group.BeginTxn();
      absl::Status st = e.op(group);
      if (st.ok()) {
        group.EndTxn();
      } else {
        group.AbortTxn();
      }
      exclusive_results.push_back(st);
    }
  }
  applied_index_value_ += ops.size();

  absl::Status commit = absl::OkStatus();
  const int64_t final_revision = group.revision();
  if (!group.empty()) {
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
        commit = absl::UnavailableError(fmt::format(
            "mkube-store: storage failed and has not recovered ({}); writes are refused",
            resumed.ToString()));
      }
    }
    if (commit.ok()) {
      rocksdb::WriteOptions wo;
      wo.sync = options_.sync;
      commit = FromRocks(db_->Write(wo, group.batch()), "write failed");
      if (!commit.ok()) {
        Log().error("group commit of {} requests (revision {}) failed: {}", ops.size(),
                    final_revision, commit.ToString());
        write_failed_ = true;
      }
    }
    if (!commit.ok()) compacted_ = compacted_before;
  }
  // Revision numbers of a failed group are never reused: they may sit in the WAL.
  next_base_revision_ = final_revision;
  if (commit.ok()) {
    applied_index_ = applied_index_value_;
    if (!group.empty()) {
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
  }

  for (auto& r : txn_results) {
    if (r.ok() && !commit.ok()) r = commit;
    if (r.ok()) {
      auto* h = r->mutable_header();
      h->set_cluster_id(cluster_id_);
      h->set_member_id(member_id_);
      h->set_raft_term(kRaftTerm);
    }
  }
  for (auto& st : exclusive_results) {
    if (st.ok() && !commit.ok()) st = commit;
  }
  // The callbacks, in request order.
  size_t ti = 0, ei = 0;
  for (auto& p : ops) {
    if (auto* t = std::get_if<Pending::TxnOp>(&p.op)) {
      t->done(std::move(txn_results[ti++]));
    } else {
      std::get<Pending::Exclusive>(p.op).done(std::move(exclusive_results[ei++]));
    }
  }
}

void KvStore::WriterLoop() {
  for (;;) {
    std::vector<Pending> ops;
    {
      absl::MutexLock lock(&queue_mu_);
      writer_idle_ = true;
      while (caller_committing_ || (!stopping_ && queue_.empty())) writer_cv_.Wait(&queue_mu_);
      writer_idle_ = false;
      if (queue_.empty()) return;  // stopping, and everything is committed
      // Exclusive requests commit alone; txns are taken up to the next exclusive one.
      if (queue_.front().exclusive()) {
        queued_bytes_ -= queue_.front().bytes;
        ops.push_back(std::move(queue_.front()));
        queue_.pop_front();
      } else {
        while (!queue_.empty() && !queue_.front().exclusive() &&
               ops.size() < options_.max_group_ops) {
          queued_bytes_ -= queue_.front().bytes;
          ops.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
    }
    CommitGroup(std::move(ops));
  }
}

absl::StatusOr<int64_t> KvStore::ReadEvents(int64_t from, int64_t to, size_t max_events,
                                            std::vector<mvccpb::Event>* out) const {
  if (auto cached = events_.Read(from, to, max_events, out)) return *cached;
  int64_t last = from - 1;
  ReadStatePtr state = Read();
  if (from < state->compacted) return absl::OutOfRangeError(kErrCompacted);
  if (auto st = ReadEventsFromDb(*state, from, std::min(to, state->revision), max_events, out,
                                 &last);
      !st.ok()) {
    return st;
  }
  return last;
}

absl::Status KvStore::ReadEventsFromDb(const ReadState& state, int64_t from, int64_t to,
                                       size_t max_events, std::vector<mvccpb::Event>* out,
                                       int64_t* last) const {
  rocksdb::ReadOptions ro;
  ro.snapshot = state.snapshot;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, families_.history));
  size_t taken = 0;
  bool ended = true;
  for (it->Seek(EncodeRevision({from, 0})); it->Valid(); it->Next()) {
    auto rev = DecodeRevision(it->key().ToStringView());
    if (!rev) return absl::DataLossError("mkube-store: corrupt revision entry");
    if (rev->main > to) break;
    if (taken >= max_events && rev->main != *last) {
      ended = false;
      break;
    }
    mvccpb::Event& ev = out->emplace_back();
    bool deleted = false;
    if (!DecodeHistory(*rev, it->value().ToStringView(), ev.mutable_kv(), &deleted)) {
      return absl::DataLossError("mkube-store: corrupt history entry");
    }
    ev.set_type(deleted ? mvccpb::Event::DELETE : mvccpb::Event::PUT);
    // The version before, unless compaction removed it or it was a deletion.
    std::optional<IndexedVersion> prev;
    {
      absl::ReaderMutexLock lock(&index_.mu);
      prev = index_.index.Previous(ev.kv().key(), *rev);
    }
    if (prev && !prev->deleted()) {
      Found f = FoundInIndex(ev.kv().key(), *prev);
      absl::Status st = LoadValues(db_.get(), families_.history, ro, {&f}, absl::NotFoundError(""));
      if (st.ok()) {
        *ev.mutable_prev_kv() = std::move(f.kv);
      } else if (!absl::IsNotFound(st)) {
        return st;
      }
    }
    ++taken;
    *last = rev->main;
  }
  if (!it->status().ok()) return FromRocks(it->status(), "read history");
  if (ended) *last = to;
  return absl::OkStatus();
}

absl::Status KvStore::ScanMeta(
    std::string_view prefix,
    const std::function<void(std::string_view, std::string_view)>& visit) const {
  ReadStatePtr state = Read();
  rocksdb::ReadOptions ro;
  ro.snapshot = state->snapshot;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, families_.meta));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    visit(it->key().ToStringView(), it->value().ToStringView());
  }
  return FromRocks(it->status(), "read meta");
}

}  // namespace mkube::store::mvcc
