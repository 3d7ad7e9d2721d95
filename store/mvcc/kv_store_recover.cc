// Opening a store: its database, identity and format (migrating the first format's), the key
// index rebuilt from the history, and the state the store goes on from.
#include <algorithm>
#include <map>
#include <random>

#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"
#include "rocksdb/options.h"
#include "rocksdb/write_buffer_manager.h"
#include "store/mvcc/codec.h"
#include "store/mvcc/kv_store.h"
#include "store/mvcc/meta.h"

namespace mkube::store::mvcc {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("mvcc");
  return logger;
}

const char* const kLegacyFamilies[] = {"rev", "key", "cur"};

// A meta record holding one number, or fallback when there is none.
absl::StatusOr<int64_t> ReadMeta64(rocksdb::DB* db, const Families& families, const char* key,
                                   int64_t fallback) {
  std::string v;
  rocksdb::Status rs = db->Get(rocksdb::ReadOptions(), families.meta, key, &v);
  if (rs.IsNotFound()) return fallback;
  if (!rs.ok()) return FromRocks(rs, "read meta");
  if (v.size() != 8) return absl::DataLossError(fmt::format("corrupt meta record {}", key));
  return static_cast<int64_t>(ReadBigEndian64(v));
}

}  // namespace

absl::Status KvStore::Recover() {
  std::vector<std::string> legacy;
  MKUBE_RETURN_IF_ERROR(OpenDatabase(&legacy));
  MKUBE_RETURN_IF_ERROR(LoadIdentity());
  MKUBE_RETURN_IF_ERROR(UpgradeFormat(legacy));

  MKUBE_ASSIGN_OR_RETURN(auto revision, ReadMeta64(db_.get(), families_, kMetaRevision, 1));
  MKUBE_ASSIGN_OR_RETURN(auto compacted, ReadMeta64(db_.get(), families_, kMetaCompacted, 0));
  MKUBE_ASSIGN_OR_RETURN(auto compact_done, ReadMeta64(db_.get(), families_, kMetaCompactDone, 0));
  MKUBE_ASSIGN_OR_RETURN(auto applied, ReadMeta64(db_.get(), families_, kMetaAppliedIndex, 0));
  {
    absl::WriterMutexLock lock(&index_.mu);
    index_.floor = compacted;
  }
  MKUBE_RETURN_IF_ERROR(BuildIndex());

  next_base_revision_ = revision;
  compacted_ = compacted;
  applied_index_value_ = static_cast<uint64_t>(applied);
  applied_index_ = applied_index_value_;
  compactor_ = std::make_unique<Compactor>(db_.get(), families_, &index_, compacted, compact_done);
  events_.SetFloor(revision + 1);
  Publish(revision, compacted);
  size_t keys = 0;
  {
    absl::ReaderMutexLock lock(&index_.mu);
    keys = index_.index.key_count();
  }
  Log().info("store recovered in {}: revision {}, compacted {}, {} keys", options_.data_dir,
             revision, compacted, keys);
  return absl::OkStatus();
}

absl::Status KvStore::OpenDatabase(std::vector<std::string>* legacy) {
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
  std::vector<std::string> existing;
  if (!rocksdb::DB::ListColumnFamilies(db_options, options_.data_dir, &existing).ok()) {
    existing.clear();  // a new store
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
      {rocksdb::kDefaultColumnFamilyName, cf_options},
      {"history", cf_options},
      {"meta", cf_options}};
  for (const char* name : kLegacyFamilies) {
    if (std::find(existing.begin(), existing.end(), name) != existing.end()) {
      legacy->push_back(name);
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
  return absl::OkStatus();
}

absl::Status KvStore::LoadIdentity() {
  std::string identity;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), families_.meta, kMetaIdentity, &identity);
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
  return absl::OkStatus();
}

absl::Status KvStore::UpgradeFormat(const std::vector<std::string>& legacy) {
  MKUBE_ASSIGN_OR_RETURN(auto format, ReadMeta64(db_.get(), families_, kMetaFormat, 0));
  if (format > kFormat) {
    return absl::FailedPreconditionError(
        fmt::format("the store in {} has format {}, newer than this mkube-store reads ({})",
                    options_.data_dir, format, kFormat));
  }
  if (!legacy.empty() || format == 0) {
    // A new store only gets its format record; a migration that was cut short after its
    // format record only has families to drop.
    MKUBE_RETURN_IF_ERROR(MigrateFormat1(legacy, format == 0));
  }
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
  MKUBE_RETURN_IF_ERROR(FromRocks(it->status(), "read history"));
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
    MKUBE_RETURN_IF_ERROR(FromRocks(it->status(), "read revisions"));
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
        MKUBE_RETURN_IF_ERROR(FromRocks(db_->Write(wo, &batch), "migration write"));
        batch.Clear();
      }
    }
    MKUBE_RETURN_IF_ERROR(FromRocks(it->status(), "read history"));
    Log().info("migrated {} versions", migrated);
  }
  // The format record commits the migration; the old families go only after it is synced.
  batch.Put(families_.meta, kMetaFormat, Encode64(kFormat)).PermitUncheckedError();
  wo.sync = true;
  MKUBE_RETURN_IF_ERROR(FromRocks(db_->Write(wo, &batch), "migration write"));
  for (const auto& name : legacy) {
    auto* h = handle(name);
    MKUBE_RETURN_IF_ERROR(FromRocks(db_->DropColumnFamily(h), "drop family " + name));
    db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    handles_.erase(std::find(handles_.begin(), handles_.end(), h));
  }
  return absl::OkStatus();
}

}  // namespace mkube::store::mvcc
