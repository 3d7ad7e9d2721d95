#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/etcd/kv.pb.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "store/mvcc/families.h"
#include "store/mvcc/key_index.h"
#include "store/mvcc/key_range.h"
#include "store/mvcc/reader.h"

namespace mkube::store::mvcc {

// Every key event of one group, in revision order. A deque, so the group's overlay can point
// into it while it grows.
using EventList = std::deque<mvccpb::Event>;

// The writes of one group commit, not yet in the database. Reads through it see the store
// overlaid with the group's own writes, so the requests of a group apply one after another
// exactly as if each had been committed alone; the group is then written with one sync.
//
// The overlay keeps, per key the group wrote, the versions it wrote (pointing into the
// events); reads look there first and merge it with the index.
//
// The database is read through `view`, a snapshot taken after the group's base revision was
// committed (the store's latest read state): it holds every version the index can name, since
// every committed version is in it and compaction deletes a version only after the index has
// forgotten it. So the index lock is held for lookups only, never across a database read.
class WriteGroup {
 public:
  WriteGroup(rocksdb::DB* db, const Families& families, const SharedIndex& index,
             int64_t base_revision, const rocksdb::Snapshot* view);

  // The store's revision with the group's writes so far.
  int64_t revision() const { return revision_; }
  // Begins a write transaction: its writes get main revision revision()+1.
  void BeginTxn();
  // Ends it; the revision advances only if it wrote anything.
  void EndTxn();
  // Drops every write since BeginTxn.
  void AbortTxn();
  bool txn_wrote() const { return txn_sub_ > 0; }
  int64_t txn_revision() const { return revision_ + 1; }

  absl::StatusOr<std::optional<mvccpb::KeyValue>> GetCurrent(std::string_view key);
  // The live keys of range now (the group's writes included), values loaded.
  absl::Status ScanCurrent(const KeyRange& range,
                           absl::FunctionRef<bool(mvccpb::KeyValue&&)> visit);
  // The live keys of range at rev (0: now), as candidates for EvaluateRange: values not
  // loaded; Load fills them. Revisions below the compaction floor are refused.
  absl::StatusOr<std::vector<Found>> Collect(const KeyRange& range, int64_t rev);
  absl::Status Load(const std::vector<Found*>& found);

  // Writes kv (its revisions already set by the caller) as the key's new version.
  void Put(mvccpb::KeyValue kv, std::optional<mvccpb::KeyValue> prev);
  // Deletes the live key whose current version is prev.
  void Delete(mvccpb::KeyValue prev);
  // Raw bookkeeping writes in the same batch.
  void PutMeta(std::string_view key, std::string_view value);
  void DeleteMeta(std::string_view key);

  EventList& events() { return events_; }
  rocksdb::WriteBatch* batch() { return &batch_; }
  bool empty() const { return batch_.Count() == 0; }

  // What the group wrote, as index entries, for the store to add once it is committed.
  void VisitVersions(
      absl::FunctionRef<void(const std::string& key, const IndexedVersion& v)> visit) const;

 private:
  struct Version {
    Revision rev;
    const mvccpb::KeyValue* kv;  // null: deleted
  };
  void Record(const std::string& key, Revision rev, const mvccpb::KeyValue* kv);
  void AttachLease(int64_t lease, std::string_view key, bool attach);

  rocksdb::DB* db_;
  Families families_;
  const SharedIndex& index_;
  rocksdb::ReadOptions read_options_;  // at the view
  rocksdb::WriteBatch batch_;
  const int64_t base_revision_;
  int64_t revision_;
  int64_t txn_sub_ = 0;
  size_t txn_first_event_ = 0;
  std::vector<std::string> txn_keys_;
  EventList events_;
  std::map<std::string, std::vector<Version>, std::less<>> overlay_;
};

// The meta-family key that records lease `lease` holds `key`.
std::string LeaseAttachmentKey(int64_t lease, std::string_view key);
inline constexpr char kMetaLeaseAttachment = 'a';

}  // namespace mkube::store::mvcc
