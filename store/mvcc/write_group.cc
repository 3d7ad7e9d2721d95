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
    : db_(db), families_(families), base_revision_(base_revision), revision_(base_revision) {}

void WriteGroup::BeginTxn() {
  txn_sub_ = 0;
  txn_first_event_ = events_.size();
  txn_keys_.clear();
  batch_.SetSavePoint();
}

void WriteGroup::EndTxn() {
  batch_.PopSavePoint().PermitUncheckedError();
  if (txn_sub_ > 0) ++revision_;
  txn_sub_ = 0;
}

void WriteGroup::AbortTxn() {
  batch_.RollbackToSavePoint().PermitUncheckedError();
  const int64_t rev = txn_revision();
  for (const auto& key : txn_keys_) {
    auto it = overlay_.find(key);
    if (it == overlay_.end()) continue;
    while (!it->second.empty() && it->second.back().revision == rev) it->second.pop_back();
    if (it->second.empty()) overlay_.erase(it);
  }
  events_.resize(txn_first_event_);
  txn_sub_ = 0;
}

absl::StatusOr<std::optional<mvccpb::KeyValue>> WriteGroup::GetCurrent(std::string_view key) {
  if (auto it = overlay_.find(key); it != overlay_.end()) {
    const mvccpb::KeyValue* kv = it->second.back().kv;
    if (!kv) return std::nullopt;
    return *kv;
  }
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), families_.cur, key, &value);
  if (s.IsNotFound()) return std::nullopt;
  if (!s.ok()) return absl::InternalError(fmt::format("mkube-store: read failed: {}", s.ToString()));
  mvccpb::KeyValue kv;
  if (!DecodeCurrent(key, value, &kv)) {
    return absl::DataLossError(fmt::format("mkube-store: corrupt current entry for key {}", key));
  }
  return kv;
}

absl::Status WriteGroup::Merge(const KeyRange& range, int64_t rev,
                               std::map<std::string, mvccpb::KeyValue>* out) {
  auto collect = [&](mvccpb::KeyValue&& kv) {
    std::string key = kv.key();
    out->emplace(std::move(key), std::move(kv));
    return true;
  };
  // The database holds nothing of the group yet, so it answers for every revision up to
  // the group's start.
  absl::Status st;
  if (rev == 0) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), families_.cur));
    st = mvcc::ScanCurrent(it.get(), range, collect);
  } else {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), families_.key));
    st = ScanAtRevision(it.get(), range, std::min(rev, base_revision_), collect);
  }
  if (!st.ok()) return st;
  for (auto it = overlay_.lower_bound(range.begin()); it != overlay_.end(); ++it) {
    if (range.Past(it->first)) break;
    if (!range.Contains(it->first)) continue;
    const Version* v = nullptr;
    for (auto r = it->second.rbegin(); r != it->second.rend(); ++r) {
      if (rev == 0 || r->revision <= rev) {
        v = &*r;
        break;
      }
    }
    if (!v) continue;  // the group's versions are all newer than rev
    if (v->kv) {
      (*out)[it->first] = *v->kv;
    } else {
      out->erase(it->first);
    }
  }
  return absl::OkStatus();
}

absl::Status WriteGroup::ScanCurrent(const KeyRange& range, KvVisitor visit) {
  if (range.single()) {
    auto kv = GetCurrent(range.begin());
    if (!kv.ok()) return kv.status();
    if (kv->has_value()) visit(std::move(**kv));
    return absl::OkStatus();
  }
  std::map<std::string, mvccpb::KeyValue> merged;
  if (auto st = Merge(range, 0, &merged); !st.ok()) return st;
  for (auto& [key, kv] : merged) {
    if (!visit(std::move(kv))) break;
  }
  return absl::OkStatus();
}

absl::Status WriteGroup::ScanAt(const KeyRange& range, int64_t rev, KvVisitor visit) {
  std::map<std::string, mvccpb::KeyValue> merged;
  if (auto st = Merge(range, rev, &merged); !st.ok()) return st;
  for (auto& [key, kv] : merged) {
    if (!visit(std::move(kv))) break;
  }
  return absl::OkStatus();
}

void WriteGroup::Record(const std::string& key, const mvccpb::KeyValue* kv) {
  auto [it, fresh] = overlay_.try_emplace(key);
  it->second.push_back(Version{txn_revision(), kv});
  txn_keys_.push_back(key);
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

void WriteGroup::Put(mvccpb::KeyValue kv, std::optional<mvccpb::KeyValue> prev) {
  const int64_t main = txn_revision();
  // One serialization (without the key) serves the current and the history family.
  std::string key;
  kv.mutable_key()->swap(key);
  std::string history(1, static_cast<char>(EntryType::kPut));
  kv.AppendToString(&history);
  kv.mutable_key()->swap(key);
  const std::string_view current = std::string_view(history).substr(1);

  std::string rev_value(1, static_cast<char>(EntryType::kPut));
  rev_value.append(kv.key());
  batch_.Put(families_.rev, EncodeRevision({main, txn_sub_}), rev_value).PermitUncheckedError();
  batch_.Put(families_.key, EncodeKeyEntry(kv.key(), main), history).PermitUncheckedError();
  batch_.Put(families_.cur, kv.key(), rocksdb::Slice(current.data(), current.size()))
      .PermitUncheckedError();
  const int64_t old_lease = prev ? prev->lease() : 0;
  if (old_lease != kv.lease()) {
    AttachLease(old_lease, kv.key(), false);
    AttachLease(kv.lease(), kv.key(), true);
  }
  ++txn_sub_;
  mvccpb::Event& ev = events_.emplace_back();
  ev.set_type(mvccpb::Event::PUT);
  *ev.mutable_kv() = std::move(kv);
  if (prev) *ev.mutable_prev_kv() = std::move(*prev);
  Record(ev.kv().key(), &ev.kv());
}

void WriteGroup::Delete(mvccpb::KeyValue prev) {
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
  *ev.mutable_prev_kv() = std::move(prev);
  Record(ev.kv().key(), nullptr);
}

void WriteGroup::PutMeta(std::string_view key, std::string_view value) {
  batch_.Put(families_.meta, rocksdb::Slice(key.data(), key.size()),
             rocksdb::Slice(value.data(), value.size()))
      .PermitUncheckedError();
}

void WriteGroup::DeleteMeta(std::string_view key) {
  batch_.Delete(families_.meta, rocksdb::Slice(key.data(), key.size())).PermitUncheckedError();
}

}  // namespace mkube::store::mvcc
