#include "store/mvcc/reader.h"

#include <algorithm>

#include "base/status.h"
#include "fmt/format.h"
#include "store/mvcc/validate.h"

namespace mkube::store::mvcc {

void AppendHistoryPut(std::string* out, const mvccpb::KeyValue& kv) {
  out->push_back(static_cast<char>(EntryType::kPut));
  kv.AppendToString(out);
}

std::string EncodeHistoryDelete(std::string_view key) {
  std::string out(1, static_cast<char>(EntryType::kTombstone));
  out.append(key);
  return out;
}

bool DecodeHistory(Revision rev, std::string_view stored, mvccpb::KeyValue* kv, bool* deleted) {
  if (stored.empty()) return false;
  const std::string_view body = stored.substr(1);
  switch (static_cast<EntryType>(stored[0])) {
    case EntryType::kPut:
      *deleted = false;
      return kv->ParseFromArray(body.data(), static_cast<int>(body.size())) &&
             kv->mod_revision() == rev.main;
    case EntryType::kTombstone:
      *deleted = true;
      kv->Clear();
      kv->set_key(body.data(), body.size());
      kv->set_mod_revision(rev.main);
      return !body.empty();
  }
  return false;
}

Found FoundInIndex(const std::string& key, const IndexedVersion& v) {
  Found f;
  f.kv.set_key(key);
  f.kv.set_create_revision(v.create_revision);
  f.kv.set_mod_revision(v.rev.main);
  f.kv.set_version(v.version);
  f.kv.set_lease(v.lease);
  f.rev = v.rev;
  return f;
}

IndexedVersion IndexEntry(Revision rev, const mvccpb::KeyValue* kv) {
  IndexedVersion v;
  v.rev = rev;
  if (kv) {
    v.create_revision = kv->create_revision();
    v.version = kv->version();
    v.lease = kv->lease();
  }
  return v;
}

absl::Status FindInIndex(const SharedIndex& index, const KeyRange& range, int64_t rev,
                         absl::FunctionRef<void(Found&&)> add) {
  absl::ReaderMutexLock lock(&index.mu);
  if (rev != 0 && rev < index.floor) return absl::OutOfRangeError(kErrCompacted);
  index.index.Range(range, rev, [&](const std::string& key, const IndexedVersion& v) {
    add(FoundInIndex(key, v));
    return true;
  });
  return absl::OkStatus();
}

absl::Status LoadMissing(std::vector<Found>& found, Loader load) {
  std::vector<Found*> wanted;
  for (auto& f : found) {
    if (!f.loaded) wanted.push_back(&f);
  }
  return wanted.empty() ? absl::OkStatus() : load(wanted);
}

namespace {
constexpr char kNotCachedUrl[] = "mkube.io/store/not-cached";
}  // namespace

absl::Status NotCachedError() {
  absl::Status st = absl::UnavailableError("mkube-store: the read needs the disk");
  st.SetPayload(kNotCachedUrl, absl::Cord());
  return st;
}

bool IsNotCached(const absl::Status& status) {
  return status.GetPayload(kNotCachedUrl).has_value();
}

absl::Status LoadValues(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* history,
                        const rocksdb::ReadOptions& ro, const std::vector<Found*>& found,
                        const absl::Status& missing) {
  auto take = [&](Found& f, std::string_view stored) {
    mvccpb::KeyValue kv;
    bool deleted = false;
    if (!DecodeHistory(f.rev, stored, &kv, &deleted) || deleted || kv.key() != f.kv.key()) {
      return absl::DataLossError(fmt::format(
          "mkube-store: corrupt history entry at revision {} for key {}", f.rev.main, f.kv.key()));
    }
    f.kv = std::move(kv);
    f.loaded = true;
    return absl::OkStatus();
  };
  auto failed = [](const rocksdb::Status& s) {
    // Incomplete: a read limited to memory (kBlockCacheTier) that needed the disk.
    if (s.IsIncomplete()) return NotCachedError();
    return absl::UnavailableError(fmt::format("mkube-store: read failed: {}", s.ToString()));
  };
  if (found.size() == 1) {  // the writer's point reads: a plain Get costs less than MultiGet
    rocksdb::PinnableSlice value;
    rocksdb::Status s = db->Get(ro, history, EncodeRevision(found[0]->rev), &value);
    if (s.IsNotFound()) return missing;
    if (!s.ok()) return failed(s);
    return take(*found[0], value.ToStringView());
  }
  constexpr size_t kBatch = 512;
  std::vector<std::string> keys;
  std::vector<rocksdb::Slice> slices;
  std::vector<rocksdb::PinnableSlice> values(std::min(found.size(), kBatch));
  std::vector<rocksdb::Status> statuses(values.size());
  for (size_t start = 0; start < found.size(); start += kBatch) {
    const size_t n = std::min(kBatch, found.size() - start);
    keys.clear();
    slices.clear();
    for (size_t i = 0; i < n; ++i) keys.push_back(EncodeRevision(found[start + i]->rev));
    for (auto& k : keys) slices.emplace_back(k);
    db->MultiGet(ro, history, n, slices.data(), values.data(), statuses.data());
    for (size_t i = 0; i < n; ++i) {
      Found& f = *found[start + i];
      if (statuses[i].IsNotFound()) return missing;
      if (!statuses[i].ok()) return failed(statuses[i]);
      MKUBE_RETURN_IF_ERROR(take(f, values[i].ToStringView()));
      values[i].Reset();
    }
  }
  return absl::OkStatus();
}

absl::Status EvaluateRange(const etcdserverpb::RangeRequest& req, std::vector<Found> candidates,
                           Loader load, etcdserverpb::RangeResponse* resp) {
  using etcdserverpb::RangeRequest;
  auto sort_order = req.sort_order();
  // Sorting by anything but the key with no order given means ascending, as in etcd.
  if (sort_order == RangeRequest::NONE && req.sort_target() != RangeRequest::KEY) {
    sort_order = RangeRequest::ASCEND;
  }
  const bool key_order =
      req.sort_target() == RangeRequest::KEY && sort_order != RangeRequest::DESCEND;
  const int64_t limit = req.limit() > 0 ? req.limit() : 0;
  resp->set_count(static_cast<int64_t>(candidates.size()));
  if (req.count_only()) return absl::OkStatus();

  auto keep = [&](const mvccpb::KeyValue& kv) {
    if (req.min_mod_revision() && kv.mod_revision() < req.min_mod_revision()) return false;
    if (req.max_mod_revision() && kv.mod_revision() > req.max_mod_revision()) return false;
    if (req.min_create_revision() && kv.create_revision() < req.min_create_revision()) return false;
    if (req.max_create_revision() && kv.create_revision() > req.max_create_revision()) return false;
    return true;
  };
  std::vector<Found> kvs;
  for (auto& f : candidates) {
    // In key order, limit+1 entries tell whether there is more.
    if (key_order && limit > 0 && static_cast<int64_t>(kvs.size()) > limit) break;
    if (keep(f.kv)) kvs.push_back(std::move(f));
  }
  if (!key_order) {
    if (req.sort_target() == RangeRequest::VALUE) {
      MKUBE_RETURN_IF_ERROR(LoadMissing(kvs, load));
    }
    auto field = [&](const mvccpb::KeyValue& kv) -> std::pair<int64_t, const std::string*> {
      switch (req.sort_target()) {
        case RangeRequest::VERSION: return {kv.version(), nullptr};
        case RangeRequest::CREATE: return {kv.create_revision(), nullptr};
        case RangeRequest::MOD: return {kv.mod_revision(), nullptr};
        case RangeRequest::VALUE: return {0, &kv.value()};
        default: return {0, &kv.key()};
      }
    };
    auto less = [&](const Found& a, const Found& b) {
      auto fa = field(a.kv), fb = field(b.kv);
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
  if (!req.keys_only()) {
    MKUBE_RETURN_IF_ERROR(LoadMissing(kvs, load));
  }
  for (auto& f : kvs) {
    if (req.keys_only()) f.kv.clear_value();
    *resp->add_kvs() = std::move(f.kv);
  }
  return absl::OkStatus();
}

}  // namespace mkube::store::mvcc
