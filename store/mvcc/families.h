#pragma once

#include "rocksdb/db.h"

namespace mkube::store::mvcc {

// The column families of one store (see reader.h and meta.h for their layouts). Not owned.
struct Families {
  rocksdb::ColumnFamilyHandle* history = nullptr;  // revision -> the version written there
  rocksdb::ColumnFamilyHandle* meta = nullptr;     // store bookkeeping and leases
};

}  // namespace mkube::store::mvcc
