#pragma once

#include <cstdint>
#include <string>

#include "proto/etcd/rpc.pb.h"

namespace mkube::apiserver::storage {

// The requests the apiserver makes of its storage, in etcd v3's messages.

// The end of the range of every key under prefix.
std::string PrefixEnd(const std::string& prefix);

// Reads of one key, and of every key under prefix (at most `limit` of them; 0: all).
etcdserverpb::RangeRequest RangeOfKey(const std::string& key);
etcdserverpb::RangeRequest RangeOfPrefix(const std::string& prefix, int64_t limit);

// Put only if the key does not exist; the transaction fails (no error) when it does.
etcdserverpb::TxnRequest CreateTxn(const std::string& key, const std::string& value);
// Put only if the key's mod_revision is still `revision`; the failure branch reads the key.
etcdserverpb::TxnRequest UpdateTxn(const std::string& key, int64_t revision,
                                   const std::string& value);
// Delete only if the key's mod_revision is still `revision`; the failure branch reads the key.
etcdserverpb::TxnRequest DeleteTxn(const std::string& key, int64_t revision);
// Put, and delete, whatever the key holds.
etcdserverpb::TxnRequest PutTxn(const std::string& key, const std::string& value);
etcdserverpb::TxnRequest DeleteKeyTxn(const std::string& key);

// A watch of every key under prefix from revision `from` (0: from now).
etcdserverpb::WatchCreateRequest PrefixWatch(const std::string& prefix, int64_t from, bool prev_kv);

}  // namespace mkube::apiserver::storage
