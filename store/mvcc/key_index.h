#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "store/mvcc/codec.h"
#include "store/mvcc/key_range.h"

namespace mkube::store::mvcc {

// One version of a key as the index knows it: where it is in the history family and the
// KeyValue fields other than the value. A deletion is a version with create_revision 0.
struct IndexedVersion {
  Revision rev;
  int64_t create_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;

  bool deleted() const { return create_revision == 0; }
};

// Every key's versions, in memory, in key order: which revision holds the version of a key
// visible at a given revision. Values stay in the history family. Not thread-safe: the store
// guards it.
class KeyIndex {
 public:
  // Records key's newest version; its revision must be above the key's others.
  void Add(std::string_view key, const IndexedVersion& v);

  // The live version of key at revision rev (0: the newest), if the key existed then.
  std::optional<IndexedVersion> Get(std::string_view key, int64_t rev) const;

  // The version of key written just before revision `before` (deleted or not), if kept.
  std::optional<IndexedVersion> Previous(std::string_view key, Revision before) const;

  // Visits the keys of range alive at rev (0: the newest) in key order until visit says stop.
  using Visitor = absl::FunctionRef<bool(const std::string& key, const IndexedVersion& v)>;
  void Range(const KeyRange& range, int64_t rev, Visitor visit) const;

  // Forgets what no read at or after revision `target` can see: per key, every version
  // below the newest one at or below target, and that one too when it is a deletion below
  // target. Appends the revisions forgotten to `removed`. Goes over at most max_keys keys from
  // *resume on (nullopt: the first key) and returns true when it reached the end; otherwise
  // *resume is where to go on, so a large index is compacted in slices between writes.
  bool Compact(int64_t target, std::vector<Revision>* removed, std::optional<std::string>* resume,
               size_t max_keys);

  size_t key_count() const { return keys_.size(); }

 private:
  // Oldest first.
  using Versions = std::vector<IndexedVersion>;
  static const IndexedVersion* At(const Versions& versions, int64_t rev);

  std::map<std::string, Versions, std::less<>> keys_;
};

}  // namespace mkube::store::mvcc

namespace mkube::store::mvcc {

// The index as the store shares it between its writer, its readers and its compactor. A
// waiting writer goes before new readers, so a stream of large reads cannot hold commits up.
struct SharedIndex {
  mutable absl::Mutex mu;
  KeyIndex index ABSL_GUARDED_BY(mu);
  // Reads below this revision are refused: compaction may have removed what they need.
  int64_t floor ABSL_GUARDED_BY(mu) = 0;
};

}  // namespace mkube::store::mvcc
