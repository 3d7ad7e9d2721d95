#include "store/mvcc/kv_store.h"

#include <algorithm>
#include <filesystem>

#include "base/status.h"
#include "fmt/format.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/write_buffer_manager.h"
#include "store/mvcc/codec.h"
#include "store/mvcc/meta.h"
#include "store/mvcc/validate.h"

namespace mkube::store::mvcc {

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
  MKUBE_RETURN_IF_ERROR(store->Recover());
  store->compactor_->Start();
  store->writer_ = std::thread([s = store.get()] { s->WriterLoop(); });
  return store;
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
  MKUBE_RETURN_IF_ERROR(EvaluateRange(req, std::move(candidates), load, &resp));
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
