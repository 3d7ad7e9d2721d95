#pragma once

#include <gtest/gtest.h>

#include <future>
#include <set>

#include "store/mvcc/kv_store.h"
#include "store/mvcc/validate.h"
#include "tests/util/process.h"

namespace mkube::store::mvcc {

class FixedLeases : public LeaseView {
 public:
  bool LeaseExists(int64_t id) const override { return ids.contains(id); }
  std::set<int64_t> ids;
};

// A KvStore in a temp folder with blocking helpers around its asynchronous writes.
class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open(StoreOptions options = {}) {
    store_.reset();
    options.data_dir = dir_.Sub("db");
    auto s = KvStore::Open(options);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    store_->SetLeaseView(&leases_);
  }

  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& req) {
    if (auto st = ValidateTxn(req, 128); !st.ok()) return st;
    std::promise<absl::StatusOr<etcdserverpb::TxnResponse>> p;
    auto f = p.get_future();
    store_->Txn(req, [&p](absl::StatusOr<etcdserverpb::TxnResponse> r) { p.set_value(std::move(r)); });
    return f.get();
  }

  // Returns the revision of the put.
  absl::StatusOr<int64_t> Put(const std::string& k, const std::string& v, int64_t lease = 0) {
    etcdserverpb::TxnRequest t;
    auto* put = t.add_success()->mutable_request_put();
    put->set_key(k);
    put->set_value(v);
    put->set_lease(lease);
    auto r = Txn(t);
    if (!r.ok()) return r.status();
    return r->header().revision();
  }

  absl::StatusOr<int64_t> Delete(const std::string& k, const std::string& end = "") {
    etcdserverpb::TxnRequest t;
    auto* del = t.add_success()->mutable_request_delete_range();
    del->set_key(k);
    del->set_range_end(end);
    auto r = Txn(t);
    if (!r.ok()) return r.status();
    return r->responses(0).response_delete_range().deleted();
  }

  absl::StatusOr<etcdserverpb::RangeResponse> Range(const std::string& k,
                                                    const std::string& end = "",
                                                    int64_t rev = 0) {
    etcdserverpb::RangeRequest req;
    req.set_key(k);
    req.set_range_end(end);
    req.set_revision(rev);
    return store_->Range(req);
  }

  // The value of k at rev, or "<none>".
  std::string ValueAt(const std::string& k, int64_t rev = 0) {
    auto r = Range(k, "", rev);
    if (!r.ok()) return std::string(r.status().message());
    return r->kvs_size() ? r->kvs(0).value() : "<none>";
  }

  absl::Status Compact(int64_t rev, bool physical) {
    std::promise<absl::Status> p;
    auto f = p.get_future();
    store_->Compact(rev, physical, [&p](absl::Status st) { p.set_value(st); });
    return f.get();
  }

  mkube::testing::TempDir dir_;
  FixedLeases leases_;
  KvStorePtr store_;
};

}  // namespace mkube::store::mvcc
