#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "proto/etcd/kv.pb.h"
#include "proto/etcd/rpc.pb.h"
#include "rocksdb/iterator.h"
#include "store/mvcc/key_range.h"

// Reading the key families. Functions here take iterators so the same code reads a committed
// snapshot and, in the writer, the snapshot overlaid with the uncommitted group batch.
namespace mkube::store::mvcc {

// Values in the "cur" family: a KeyValue without its key (the RocksDB key is the user key).
std::string EncodeCurrent(const mvccpb::KeyValue& kv);
bool DecodeCurrent(std::string_view user_key, std::string_view stored, mvccpb::KeyValue* kv);

// Values in the "key" (history) family: a type byte, then for a put the KeyValue without key.
std::string EncodeHistoryPut(const mvccpb::KeyValue& kv);
std::string EncodeHistoryTombstone();
// Returns false when the value is malformed; *tombstone tells a deletion.
bool DecodeHistory(std::string_view user_key, std::string_view stored, mvccpb::KeyValue* kv,
                   bool* tombstone);

// Stops the scan when it returns false.
using KvVisitor = absl::FunctionRef<bool(mvccpb::KeyValue&&)>;

// Visits the live keys of `range` in key order, reading the "cur" family.
absl::Status ScanCurrent(rocksdb::Iterator* cur_it, const KeyRange& range, KvVisitor visit);

// Visits the keys of `range` as they were at revision `rev`, reading the "key" family.
absl::Status ScanAtRevision(rocksdb::Iterator* key_it, const KeyRange& range, int64_t rev,
                            KvVisitor visit);

// Which kvs a RangeRequest wants and how they are ordered and cut. `scan` must visit the
// candidate keys in key order. Sets kvs, more and count, not the header.
absl::Status EvaluateRange(const etcdserverpb::RangeRequest& req,
                           absl::FunctionRef<absl::Status(KvVisitor)> scan,
                           etcdserverpb::RangeResponse* resp);

}  // namespace mkube::store::mvcc
