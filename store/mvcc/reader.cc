#include "store/mvcc/reader.h"

#include <algorithm>
#include <vector>

#include "fmt/format.h"
#include "store/mvcc/codec.h"

namespace mkube::store::mvcc {
namespace {

absl::Status Corrupt(std::string_view what, std::string_view key) {
  return absl::DataLossError(fmt::format("mkube-store: corrupt {} entry for key {}", what, key));
}

absl::Status IteratorStatus(rocksdb::Iterator* it) {
  if (it->status().ok()) return absl::OkStatus();
  return absl::InternalError(fmt::format("mkube-store: read failed: {}", it->status().ToString()));
}

}  // namespace

std::string EncodeCurrent(const mvccpb::KeyValue& kv) {
  mvccpb::KeyValue copy = kv;
  copy.clear_key();
  return copy.SerializeAsString();
}

bool DecodeCurrent(std::string_view user_key, std::string_view stored, mvccpb::KeyValue* kv) {
  if (!kv->ParseFromArray(stored.data(), static_cast<int>(stored.size()))) return false;
  kv->set_key(user_key.data(), user_key.size());
  return true;
}

std::string EncodeHistoryPut(const mvccpb::KeyValue& kv) {
  std::string out(1, static_cast<char>(EntryType::kPut));
  mvccpb::KeyValue copy = kv;
  copy.clear_key();
  copy.AppendToString(&out);
  return out;
}

std::string EncodeHistoryTombstone() { return std::string(1, static_cast<char>(EntryType::kTombstone)); }

bool DecodeHistory(std::string_view user_key, std::string_view stored, mvccpb::KeyValue* kv,
                   bool* tombstone) {
  if (stored.empty()) return false;
  *tombstone = stored[0] == static_cast<char>(EntryType::kTombstone);
  if (*tombstone) return stored.size() == 1;
  if (stored[0] != static_cast<char>(EntryType::kPut)) return false;
  return DecodeCurrent(user_key, stored.substr(1), kv);
}

absl::Status ScanCurrent(rocksdb::Iterator* it, const KeyRange& range, KvVisitor visit) {
  if (range.empty()) return absl::OkStatus();
  for (it->Seek(range.begin()); it->Valid(); it->Next()) {
    std::string_view k = it->key().ToStringView();
    if (range.Past(k)) break;
    mvccpb::KeyValue kv;
    if (!DecodeCurrent(k, it->value().ToStringView(), &kv)) return Corrupt("current", k);
    if (!visit(std::move(kv))) return absl::OkStatus();
  }
  return IteratorStatus(it);
}

absl::Status ScanAtRevision(rocksdb::Iterator* it, const KeyRange& range, int64_t rev,
                            KvVisitor visit) {
  if (range.empty()) return absl::OkStatus();
  it->Seek(KeyEntryStart(range.begin()));
  while (it->Valid()) {
    std::optional<KeyEntry> entry = DecodeKeyEntry(it->key().ToStringView());
    if (!entry) return Corrupt("history key", it->key().ToStringView());
    if (range.Past(entry->user_key)) break;
    if (entry->main > rev) {
      // Newer than asked for: jump to this key's newest entry at or below rev.
      it->Seek(EncodeKeyEntry(entry->user_key, rev));
      continue;
    }
    mvccpb::KeyValue kv;
    bool tombstone = false;
    if (!DecodeHistory(entry->user_key, it->value().ToStringView(), &kv, &tombstone)) {
      return Corrupt("history", entry->user_key);
    }
    if (!tombstone && !visit(std::move(kv))) return absl::OkStatus();
    it->Seek(KeyEntryEnd(entry->user_key));
  }
  return IteratorStatus(it);
}

absl::Status EvaluateRange(const etcdserverpb::RangeRequest& req,
                           absl::FunctionRef<absl::Status(KvVisitor)> scan,
                           etcdserverpb::RangeResponse* resp) {
  using etcdserverpb::RangeRequest;
  auto sort_order = req.sort_order();
  // Sorting by anything but the key with no order given means ascending, as in etcd.
  if (sort_order == RangeRequest::NONE && req.sort_target() != RangeRequest::KEY) {
    sort_order = RangeRequest::ASCEND;
  }
  const bool key_order =
      req.sort_target() == RangeRequest::KEY && sort_order != RangeRequest::DESCEND;
  const bool filtered = req.min_mod_revision() || req.max_mod_revision() ||
                        req.min_create_revision() || req.max_create_revision();
  const int64_t limit = req.limit() > 0 ? req.limit() : 0;
  // In key order with no filter, stop collecting after limit+1 (to learn `more`), still count.
  const bool early_cut = key_order && !filtered && limit > 0;

  int64_t count = 0;
  std::vector<mvccpb::KeyValue> kvs;
  auto keep = [&](const mvccpb::KeyValue& kv) {
    if (req.min_mod_revision() && kv.mod_revision() < req.min_mod_revision()) return false;
    if (req.max_mod_revision() && kv.mod_revision() > req.max_mod_revision()) return false;
    if (req.min_create_revision() && kv.create_revision() < req.min_create_revision()) return false;
    if (req.max_create_revision() && kv.create_revision() > req.max_create_revision()) return false;
    return true;
  };
  absl::Status st = scan([&](mvccpb::KeyValue&& kv) {
    ++count;
    if (req.count_only()) return true;
    if (early_cut && static_cast<int64_t>(kvs.size()) > limit) return true;
    if (!keep(kv)) return true;
    if (req.keys_only()) kv.clear_value();
    kvs.push_back(std::move(kv));
    return true;
  });
  if (!st.ok()) return st;

  if (!key_order) {
    auto field = [&](const mvccpb::KeyValue& kv) -> std::pair<int64_t, const std::string*> {
      switch (req.sort_target()) {
        case RangeRequest::VERSION: return {kv.version(), nullptr};
        case RangeRequest::CREATE: return {kv.create_revision(), nullptr};
        case RangeRequest::MOD: return {kv.mod_revision(), nullptr};
        case RangeRequest::VALUE: return {0, &kv.value()};
        default: return {0, &kv.key()};
      }
    };
    auto less = [&](const mvccpb::KeyValue& a, const mvccpb::KeyValue& b) {
      auto fa = field(a), fb = field(b);
      if (fa.second) return *fa.second < *fb.second;
      return fa.first < fb.first;
    };
    if (sort_order == RangeRequest::DESCEND) {
      std::stable_sort(kvs.begin(), kvs.end(), [&](auto& a, auto& b) { return less(b, a); });
    } else {
      std::stable_sort(kvs.begin(), kvs.end(), less);
    }
  }
  if (limit > 0 && static_cast<int64_t>(kvs.size()) > limit) {
    kvs.resize(limit);
    resp->set_more(true);
  }
  resp->set_count(count);
  for (auto& kv : kvs) *resp->add_kvs() = std::move(kv);
  return absl::OkStatus();
}

}  // namespace mkube::store::mvcc
