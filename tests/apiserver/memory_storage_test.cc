// The in-memory storage the apiserver's unit tests run on, checked by the suite every storage
// passes (mkube-store and etcd pass it in etcd_storage_test).
#include "apiserver/storage/testing/memory_storage.h"

#include "tests/apiserver/storage_suite.h"

namespace mkube::testing {
namespace {

using apiserver::storage::testing::MemoryStorage;

INSTANTIATE_TEST_SUITE_P(
    Storages, StorageTest,
    ::testing::Values(StorageBackend{
        .name = "memory",
        .missing = [] { return std::string(); },
        .start = [](const std::string&) -> absl::StatusOr<ServedStorage> {
          ServedStorage served;
          served.storage = std::make_unique<MemoryStorage>();
          return served;
        }}),
    [](const auto& info) { return info.param.name; });

TEST(MemoryStorageTest, AWatchEndsWithTheStorage) {
  auto storage = std::make_unique<MemoryStorage>();
  auto watch = storage->Watch(apiserver::storage::PrefixWatch("/r/", 0, false));
  etcdserverpb::WatchResponse resp;
  ASSERT_TRUE(watch->Read(&resp));
  storage.reset();
  EXPECT_FALSE(watch->Read(&resp));
}

TEST(MemoryStorageTest, WhatItDoesNotKeepIsRefusedNotIgnored) {
  MemoryStorage storage;
  etcdserverpb::TxnRequest nested;
  nested.add_success()->mutable_request_txn();
  EXPECT_EQ(storage.Txn(nested).status().code(), absl::StatusCode::kUnimplemented);
  etcdserverpb::TxnRequest leased = apiserver::storage::PutTxn("/k", "v");
  leased.mutable_success(0)->mutable_request_put()->set_lease(7);
  EXPECT_EQ(storage.Txn(leased).status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(storage.Txn(apiserver::storage::PutTxn("", "v")).status().message(),
            "etcdserver: key is not provided");
}

}  // namespace
}  // namespace mkube::testing
