#include "store/mvcc/write_group.h"

#include "base/status.h"
#include "fmt/format.h"
#include "store/mvcc/codec.h"
#include "store/mvcc/validate.h"

namespace mkube::store::mvcc {

std::string LeaseAttachmentKey(int64_t lease, std::string_view key) {
  std::string out(1, kMetaLeaseAttachment);
  AppendBigEndian64(&out, static_cast<uint64_t>(lease));
  out.append(key);
  return out;
}

WriteGroup::WriteGroup(rocksdb::DB* db, const Families& families, const SharedIndex& index,
                       int64_t base_revision, const rocksdb::Snapshot* view)
    : db_(db),
      families_(families),
      index_(index),
      base_revision_(base_revision),
      revision_(base_revision) {
  read_options_.snapshot = view;
}

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
    while (!it->second.empty() && it->second.back().rev.main == rev) it->second.pop_back();
    if (it->second.empty()) overlay_.erase(it);
  }
  events_.resize(txn_first_event_);
  txn_sub_ = 0;
}

absl::Status WriteGroup::Load(const std::vector<Found*>& found) {
  // The view holds what the index named when `found` was collected, whatever compaction has
  // deleted since.
  return LoadValues(db_, families_.history, read_options_, found,
                    absl::OutOfRangeError(kErrCompacted));
}

absl::StatusOr<std::optional<mvccpb::KeyValue>> WriteGroup::GetCurrent(std::string_view key) {
  if (auto it = overlay_.find(key); it != overlay_.end()) {
    const mvccpb::KeyValue* kv = it->second.back().kv;
    if (!kv) return std::nullopt;
    return *kv;
  }
  std::optional<IndexedVersion> v;
  {
    absl::ReaderMutexLock lock(&index_.mu);
    v = index_.index.Get(key, 0);
  }
  if (!v) return std::nullopt;
  Found f = FoundInIndex(std::string(key), *v);
  if (auto st = LoadValues(db_, families_.history, read_options_, {&f},
                           absl::DataLossError(fmt::format(
                               "mkube-store: the current version of key {} is missing", key)));
      !st.ok()) {
    return st;
  }
  return std::move(f.kv);
}

absl::StatusOr<std::vector<Found>> WriteGroup::Collect(const KeyRange& range, int64_t rev) {
  std::map<std::string, Found, std::less<>> merged;
  // The index holds nothing of the group yet, so it answers for every revision up to the
  // group's start.
  absl::Status st = FindInIndex(index_, range, rev == 0 ? 0 : std::min(rev, base_revision_),
                                [&](Found&& f) {
                                  std::string key = f.kv.key();
                                  merged.emplace(std::move(key), std::move(f));
                                });
  if (!st.ok()) return st;
  for (auto it = overlay_.lower_bound(range.begin()); it != overlay_.end(); ++it) {
    if (range.Past(it->first)) break;
    if (!range.Contains(it->first)) continue;
    const Version* v = nullptr;
    for (auto r = it->second.rbegin(); r != it->second.rend(); ++r) {
      if (rev == 0 || r->rev.main <= rev) {
        v = &*r;
        break;
      }
    }
    if (!v) continue;  // the group's versions are all newer than rev
    if (v->kv) {
      Found& f = merged[it->first];
      f.kv = *v->kv;
      f.rev = v->rev;
      f.loaded = true;
    } else {
      merged.erase(it->first);
    }
  }
  std::vector<Found> out;
  out.reserve(merged.size());
  for (auto& [key, f] : merged) out.push_back(std::move(f));
  return out;
}

absl::Status WriteGroup::ScanCurrent(const KeyRange& range,
                                     absl::FunctionRef<bool(mvccpb::KeyValue&&)> visit) {
  if (range.single()) {
    auto kv = GetCurrent(range.begin());
    if (!kv.ok()) return kv.status();
    if (kv->has_value()) visit(std::move(**kv));
    return absl::OkStatus();
  }
  MKUBE_ASSIGN_OR_RETURN(auto found, Collect(range, 0));
  if (auto st = LoadMissing(found, [&](const std::vector<Found*>& f) { return Load(f); });
      !st.ok()) {
    return st;
  }
  for (auto& f : found) {
    if (!visit(std::move(f.kv))) break;
  }
  return absl::OkStatus();
}

void WriteGroup::VisitVersions(
    absl::FunctionRef<void(const std::string& key, const IndexedVersion& v)> visit) const {
  for (const auto& [key, versions] : overlay_) {
    for (const auto& v : versions) visit(key, IndexEntry(v.rev, v.kv));
  }
}

void WriteGroup::Record(const std::string& key, Revision rev, const mvccpb::KeyValue* kv) {
  auto [it, fresh] = overlay_.try_emplace(key);
  it->second.push_back(Version{rev, kv});
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
  const Revision rev{txn_revision(), txn_sub_};
  std::string stored;
  stored.reserve(kv.ByteSizeLong() + 1);
  AppendHistoryPut(&stored, kv);
  batch_.Put(families_.history, EncodeRevision(rev), stored).PermitUncheckedError();
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
  Record(ev.kv().key(), rev, &ev.kv());
}

void WriteGroup::Delete(mvccpb::KeyValue prev) {
  const Revision rev{txn_revision(), txn_sub_};
  batch_.Put(families_.history, EncodeRevision(rev), EncodeHistoryDelete(prev.key()))
      .PermitUncheckedError();
  AttachLease(prev.lease(), prev.key(), false);
  ++txn_sub_;
  mvccpb::Event& ev = events_.emplace_back();
  ev.set_type(mvccpb::Event::DELETE);
  ev.mutable_kv()->set_key(prev.key());
  ev.mutable_kv()->set_mod_revision(rev.main);
  *ev.mutable_prev_kv() = std::move(prev);
  Record(ev.kv().key(), rev, nullptr);
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
