#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "rocksdb/status.h"

// What the store's parts (kv_store*.cc, compactor.cc) share about its database: the records of
// the meta family, and RocksDB's statuses as ours.
namespace mkube::store::mvcc {

// Meta-family records.
inline constexpr char kMetaIdentity[] = "I";        // cluster id, member id
inline constexpr char kMetaRevision[] = "R";        // the store's revision
inline constexpr char kMetaCompacted[] = "C";       // compaction requested up to
inline constexpr char kMetaCompactDone[] = "F";     // compaction finished up to
inline constexpr char kMetaAppliedIndex[] = "X";    // count of applied requests
inline constexpr char kMetaFormat[] = "V";          // layout of the families (kFormat)

// Format 2: one "history" family, revision -> version, and the key index in memory. Format 1
// (no record) kept three families: "rev" (revision -> type, key), "key" ((key, revision) ->
// version without its key) and "cur" (key -> live version); it is migrated at start.
inline constexpr int64_t kFormat = 2;

inline constexpr size_t kCompactBatch = 10000;

std::string Encode64(int64_t v);

absl::Status FromRocks(const rocksdb::Status& s, std::string_view what);

}  // namespace mkube::store::mvcc
