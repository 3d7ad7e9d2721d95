#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "proto/etcd/kv.pb.h"
#include "proto/etcd/rpc.pb.h"
#include "rocksdb/db.h"
#include "store/mvcc/codec.h"
#include "store/mvcc/key_index.h"

// Reading the history family, and evaluating range requests over keys found in the index.
namespace mkube::store::mvcc {

// Values in the "history" family (keyed by EncodeRevision): a type byte, then for a put the
// whole KeyValue, for a deletion the user key.
void AppendHistoryPut(std::string* out, const mvccpb::KeyValue& kv);
std::string EncodeHistoryDelete(std::string_view key);
// For a deletion, kv gets the key and mod_revision. Returns false when the value is malformed.
bool DecodeHistory(Revision rev, std::string_view stored, mvccpb::KeyValue* kv, bool* deleted);

// A version a read found: its KeyValue, without the value until loaded, and where it is stored.
struct Found {
  mvccpb::KeyValue kv;
  Revision rev;
  bool loaded = false;
};
Found FoundInIndex(const std::string& key, const IndexedVersion& v);
// The index's entry for a version written at rev: kv, or a deletion when null.
IndexedVersion IndexEntry(Revision rev, const mvccpb::KeyValue* kv);

// The live keys of range at rev (0: the newest) as the index knows them, in key order;
// a read below the compaction floor is refused.
absl::Status FindInIndex(const SharedIndex& index, const KeyRange& range, int64_t rev,
                         absl::FunctionRef<void(Found&&)> add);

// What a read limited to memory answers when it would have needed the disk, and the test for
// it (KvStore::Range with cache_only).
absl::Status NotCachedError();
bool IsNotCached(const absl::Status& status);

// Loads the values of versions (all live puts) from the history family as `ro` sees it.
// A version missing there is reported with `missing` (the caller knows whether that means
// compacted or corrupt).
absl::Status LoadValues(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* history,
                        const rocksdb::ReadOptions& ro, const std::vector<Found*>& found,
                        const absl::Status& missing);
using Loader = absl::FunctionRef<absl::Status(const std::vector<Found*>&)>;
// Loads, through `load`, the values of the versions in `found` not loaded yet.
absl::Status LoadMissing(std::vector<Found>& found, Loader load);

// Which of the candidates (the live keys of the range at the read's revision, in key order) a
// RangeRequest wants, how they are ordered and cut; loads values only for what it returns
// (or sorts by). Sets kvs, more and count, not the header.
absl::Status EvaluateRange(const etcdserverpb::RangeRequest& req, std::vector<Found> candidates,
                           Loader load, etcdserverpb::RangeResponse* resp);

}  // namespace mkube::store::mvcc
