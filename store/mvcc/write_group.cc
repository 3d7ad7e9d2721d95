#include "store/mvcc/write_group.h"

#include "fmt/format.h"
#include "store/mvcc/codec.h"

namespace mkube::store::mvcc {

std::string LeaseAttachmentKey(int64_t lease, std::string_view key) {
  std::string out(1, kMetaLeaseAttachment);
  AppendBigEndian64(&out, static_cast<uint64_t>(lease));
  out.append(key);
  return out;
}

WriteGroup::WriteGroup(rocksdb::DB* db, const Families& families, int64_t base_revision)
    : db_(db),
      families_(families),
      batch_(rocksdb::BytewiseComparator(), 0, /*overwrite_key=*/true),
      revision_(base_revision) {}

void WriteGroup::BeginTxn() {
  txn_sub_ = 0;
  txn_first_event_ = events_.size();
  batch_.SetSavePoint();
}

void WriteGroup::EndTxn() {
  batch_.PopSavePoint().PermitUncheckedError();
  if (txn_sub_ > 0) ++revision_;
  txn_sub_ = 0;
}

void WriteGroup::AbortTxn() {
  batch_.RollbackToSavePoint().PermitUncheckedError();
  events_.resize(txn_first_event_);
  txn_sub_ = 0;
}

absl::StatusOr<std::optional<mvccpb::KeyValue>> WriteGroup::GetCurrent(std::string_view key) {
  std::string value;
  rocksdb::Status s =
      batch_.GetFromBatchAndDB(db_, rocksdb::ReadOptions(), families_.cur, key, &value);
  if (s.IsNotFound()) return std::nullopt;
  if (!s.ok()) return absl::InternalError(fmt::format("mkube-store: read failed: {}", s.ToString()));
  mvccpb::KeyValue kv;
  if (!DecodeCurrent(key, value, &kv)) {
    return absl::DataLossError(fmt::format("mkube-store: corrupt current entry for key {}", key));
  }
  return kv;
}

absl::Status WriteGroup::ScanCurrent(const KeyRange& range, KvVisitor visit) {
  std::unique_ptr<rocksdb::Iterator> it(batch_.NewIteratorWithBase(
      families_.cur, db_->NewIterator(rocksdb::ReadOptions(), families_.cur)));
  return mvcc::ScanCurrent(it.get(), range, visit);
}

absl::Status WriteGroup::ScanAt(const KeyRange& range, int64_t rev, KvVisitor visit) {
  std::unique_ptr<rocksdb::Iterator> it(batch_.NewIteratorWithBase(
      families_.key, db_->NewIterator(rocksdb::ReadOptions(), families_.key)));
  return ScanAtRevision(it.get(), range, rev, visit);
}

void WriteGroup::AttachLease(int64_t lease, std::string_view key, bool attach) {
  if (lease == 0) return;
  std::string k = LeaseAttachmentKey(lease, key);
  if (attach) {
    batch_.Put(families_.meta, k, "").PermitUncheckedError();
  } else {
    batch_.Delete(families_.meta, k).PermitUncheckedError();
  }
}

void WriteGroup::Put(const mvccpb::KeyValue& kv, const mvccpb::KeyValue* prev) {
  const int64_t main = txn_revision();
  std::string rev_value(1, static_cast<char>(EntryType::kPut));
  rev_value.append(kv.key());
  batch_.Put(families_.rev, EncodeRevision({main, txn_sub_}), rev_value).PermitUncheckedError();
  batch_.Put(families_.key, EncodeKeyEntry(kv.key(), main), EncodeHistoryPut(kv))
      .PermitUncheckedError();
  batch_.Put(families_.cur, kv.key(), EncodeCurrent(kv)).PermitUncheckedError();
  const int64_t old_lease = prev ? prev->lease() : 0;
  if (old_lease != kv.lease()) {
    AttachLease(old_lease, kv.key(), false);
    AttachLease(kv.lease(), kv.key(), true);
  }
  ++txn_sub_;
  mvccpb::Event& ev = events_.emplace_back();
  ev.set_type(mvccpb::Event::PUT);
  *ev.mutable_kv() = kv;
  if (prev) *ev.mutable_prev_kv() = *prev;
}

void WriteGroup::Delete(const mvccpb::KeyValue& prev) {
  const int64_t main = txn_revision();
  std::string rev_value(1, static_cast<char>(EntryType::kTombstone));
  rev_value.append(prev.key());
  batch_.Put(families_.rev, EncodeRevision({main, txn_sub_}), rev_value).PermitUncheckedError();
  batch_.Put(families_.key, EncodeKeyEntry(prev.key(), main), EncodeHistoryTombstone())
      .PermitUncheckedError();
  batch_.Delete(families_.cur, prev.key()).PermitUncheckedError();
  AttachLease(prev.lease(), prev.key(), false);
  ++txn_sub_;
  mvccpb::Event& ev = events_.emplace_back();
  ev.set_type(mvccpb::Event::DELETE);
  ev.mutable_kv()->set_key(prev.key());
  ev.mutable_kv()->set_mod_revision(main);
  *ev.mutable_prev_kv() = prev;
}

void WriteGroup::PutMeta(std::string_view key, std::string_view value) {
  batch_.Put(families_.meta, key, value).PermitUncheckedError();
}

void WriteGroup::DeleteMeta(std::string_view key) {
  batch_.Delete(families_.meta, key).PermitUncheckedError();
}

}  // namespace mkube::store::mvcc
