#pragma once

#include "rocksdb/db.h"

namespace mkube::store::mvcc {

// The column families of one store (see codec.h for their layouts). Not owned.
struct Families {
  rocksdb::ColumnFamilyHandle* rev = nullptr;   // revision -> (type, key)
  rocksdb::ColumnFamilyHandle* key = nullptr;   // (key, revision) -> history entry
  rocksdb::ColumnFamilyHandle* cur = nullptr;   // key -> its live KeyValue
  rocksdb::ColumnFamilyHandle* meta = nullptr;  // store bookkeeping and leases
};

}  // namespace mkube::store::mvcc
