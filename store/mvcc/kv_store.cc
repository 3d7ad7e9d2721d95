#include "store/mvcc/kv_store.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include "base/log.h"
#include "fmt/format.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/write_buffer_manager.h"
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

KvStore::KvStore(const StoreOptions& options)
    : options_(options),
      queue_(options.max_queued_requests, options.max_queued_bytes, options.max_group_ops),
      events_(options.event_cache_bytes) {}

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
  // New writes are refused; the writer commits and answers what was queued, then ends.
  queue_.Stop();
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
