#pragma once

// What the apiserver relies on of its storage, as one suite that runs on every implementation
// (the in-memory one in the unit tests; mkube-store and etcd through the etcd one in the
// integration tests), so that the in-memory storage answers as the store does: revisions,
// compare-and-swap transactions, ordered watches from a revision, and compaction.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "apiserver/storage/requests.h"
#include "apiserver/storage/storage.h"
#include "tests/util/process.h"

namespace mkube::testing {

// A storage and whatever serves it, kept alive as long.
struct ServedStorage {
  std::shared_ptr<void> server;
  std::unique_ptr<apiserver::storage::Storage> storage;  // ends before the server
};

struct StorageBackend {
  std::string name;
  // Why this host cannot run it; empty when it can.
  std::function<std::string()> missing;
  // A fresh, empty storage with its data under dir.
  std::function<absl::StatusOr<ServedStorage>(const std::string& dir)> start;
};

class StorageTest : public ::testing::TestWithParam<StorageBackend> {
 protected:
  void SetUp() override {
    if (const std::string why = GetParam().missing(); !why.empty()) GTEST_SKIP() << why;
    auto served = GetParam().start(dir_.Sub("data"));
    ASSERT_TRUE(served.ok()) << served.status();
    served_ = std::move(*served);
    store_ = served_.storage.get();
  }

  // The revision of a write that must succeed.
  int64_t Write(const etcdserverpb::TxnRequest& txn) {
    auto r = store_->Txn(txn);
    EXPECT_TRUE(r.ok() && r->succeeded()) << r.status();
    return r.ok() ? r->header().revision() : 0;
  }
  int64_t Put(const std::string& key, const std::string& value) {
    return Write(apiserver::storage::PutTxn(key, value));
  }
  int64_t Revision() {
    auto r = store_->Get("/");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->header().revision() : 0;
  }

  // The events of a watch until `count` have come (or the watch ended), as "TYPE key@rev",
  // with "|" between responses.
  static std::string Events(apiserver::storage::WatchStream& watch, size_t count,
                            bool with_prev = false) {
    std::string out;
    size_t seen = 0;
    etcdserverpb::WatchResponse resp;
    while (seen < count && watch.Read(&resp)) {
      if (resp.created() || resp.events().empty()) continue;
      if (!out.empty()) out += " | ";
      for (int i = 0; i < resp.events_size(); ++i) {
        const mvccpb::Event& e = resp.events(i);
        if (i > 0) out += " ";
        out += (e.type() == mvccpb::Event::PUT ? "PUT " : "DELETE ") + e.kv().key() + "@" +
               std::to_string(e.kv().mod_revision());
        if (with_prev && e.has_prev_kv()) out += "(was " + e.prev_kv().value() + ")";
        ++seen;
      }
    }
    return out;
  }
  static std::string At(int64_t rev) { return "@" + std::to_string(rev); }

  TempDir dir_;
  ServedStorage served_;
  apiserver::storage::Storage* store_ = nullptr;
};

TEST_P(StorageTest, EveryTransactionThatWritesMakesOneRevisionOfTheWholeStore) {
  const int64_t start = Revision();
  EXPECT_EQ(start, 1) << "a fresh store is at revision 1";
  EXPECT_EQ(Put("/a", "1"), start + 1);
  EXPECT_EQ(Put("/b", "1"), start + 2);
  etcdserverpb::TxnRequest both = apiserver::storage::PutTxn("/a", "2");
  both.MergeFrom(apiserver::storage::PutTxn("/c", "2"));
  EXPECT_EQ(Write(both), start + 3);
  auto a = store_->Get("/a");
  auto c = store_->Get("/c");
  ASSERT_TRUE(a.ok() && c.ok());
  EXPECT_EQ(a->kvs(0).mod_revision(), start + 3);
  EXPECT_EQ(c->kvs(0).mod_revision(), start + 3);
  auto failed = store_->Txn(apiserver::storage::CreateTxn("/a", "3"));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_FALSE(failed->succeeded());
  EXPECT_EQ(failed->header().revision(), start + 3) << "a failed transaction writes nothing";
  EXPECT_EQ(Write(apiserver::storage::DeleteKeyTxn("/nothing")), start + 3)
      << "a delete of nothing writes nothing";
  EXPECT_EQ(Revision(), start + 3);
}

TEST_P(StorageTest, KeysCarryTheRevisionsThatCreatedAndLastChangedThemAndTheirVersion) {
  const int64_t created = Write(apiserver::storage::CreateTxn("/k", "v1"));
  Put("/other", "x");
  Put("/k", "v2");
  const int64_t last = Put("/k", "v3");
  auto k = store_->Get("/k");
  ASSERT_TRUE(k.ok()) << k.status();
  ASSERT_EQ(k->kvs_size(), 1);
  EXPECT_EQ(k->kvs(0).key(), "/k");
  EXPECT_EQ(k->kvs(0).value(), "v3");
  EXPECT_EQ(k->kvs(0).create_revision(), created);
  EXPECT_EQ(k->kvs(0).mod_revision(), last);
  EXPECT_EQ(k->kvs(0).version(), 3);
  EXPECT_EQ(k->header().revision(), last);
  Write(apiserver::storage::DeleteKeyTxn("/k"));
  const int64_t again = Put("/k", "v4");
  k = store_->Get("/k");
  ASSERT_TRUE(k.ok() && k->kvs_size() == 1);
  EXPECT_EQ(k->kvs(0).create_revision(), again) << "created anew";
  EXPECT_EQ(k->kvs(0).version(), 1);
  auto none = store_->Get("/none");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->kvs_size(), 0);
  EXPECT_EQ(none->header().revision(), again);
}

TEST_P(StorageTest, UpdatesAndDeletesSwapOnlyTheRevisionTheyRead) {
  const int64_t v1 = Write(apiserver::storage::CreateTxn("/k", "v1"));
  const int64_t v2 = Write(apiserver::storage::UpdateTxn("/k", v1, "v2"));
  // A writer that read v1 lost: the failure branch reads what beat it.
  auto lost = store_->Txn(apiserver::storage::UpdateTxn("/k", v1, "late"));
  ASSERT_TRUE(lost.ok()) << lost.status();
  EXPECT_FALSE(lost->succeeded());
  ASSERT_EQ(lost->responses_size(), 1);
  const auto& read = lost->responses(0).response_range();
  ASSERT_EQ(read.kvs_size(), 1);
  EXPECT_EQ(read.kvs(0).value(), "v2");
  EXPECT_EQ(read.kvs(0).mod_revision(), v2);
  auto stale = store_->Txn(apiserver::storage::DeleteTxn("/k", v1));
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->succeeded());
  auto deleted = store_->Txn(apiserver::storage::DeleteTxn("/k", v2));
  ASSERT_TRUE(deleted.ok());
  ASSERT_TRUE(deleted->succeeded());
  const auto& del = deleted->responses(0).response_delete_range();
  EXPECT_EQ(del.deleted(), 1);
  ASSERT_EQ(del.prev_kvs_size(), 1);
  EXPECT_EQ(del.prev_kvs(0).value(), "v2");
  // Gone: the failure branch reads nothing.
  auto gone = store_->Txn(apiserver::storage::UpdateTxn("/k", v2, "v3"));
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->succeeded());
  EXPECT_EQ(gone->responses(0).response_range().kvs_size(), 0);
}

// The compactor's turn-taking: a version compare, where a key never written has version 0.
TEST_P(StorageTest, AKeyNeverWrittenHasVersionZeroAndNoValue) {
  auto cas = [&](int64_t version) {
    etcdserverpb::TxnRequest t = apiserver::storage::PutTxn("/turn", "x");
    auto* c = t.add_compare();
    c->set_key("/turn");
    c->set_target(etcdserverpb::Compare::VERSION);
    c->set_result(etcdserverpb::Compare::EQUAL);
    c->set_version(version);
    auto r = store_->Txn(t);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() && r->succeeded();
  };
  EXPECT_TRUE(cas(0));
  EXPECT_FALSE(cas(0));
  EXPECT_TRUE(cas(1));
  EXPECT_TRUE(cas(2));
  etcdserverpb::TxnRequest empty_value = apiserver::storage::PutTxn("/never", "x");
  auto* c = empty_value.add_compare();
  c->set_key("/never");
  c->set_target(etcdserverpb::Compare::VALUE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_value("");
  auto r = store_->Txn(empty_value);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->succeeded()) << "a value compare on a missing key fails";
}

TEST_P(StorageTest, ListsAPrefixInKeyOrderUpToALimit) {
  for (const char* key : {"/r/b", "/r/a", "/s/x", "/r", "/r/c", "/q"}) Put(key, key);
  auto all = store_->List("/r/");
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<std::string> keys;
  for (const auto& kv : all->kvs()) keys.push_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"/r/a", "/r/b", "/r/c"}));
  EXPECT_EQ(all->count(), 3);
  EXPECT_FALSE(all->more());
  EXPECT_EQ(all->header().revision(), Revision());
  auto two = store_->List("/r/", 2);
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ(two->kvs_size(), 2);
  EXPECT_EQ(two->kvs(1).key(), "/r/b");
  EXPECT_EQ(two->count(), 3);
  EXPECT_TRUE(two->more());
}

TEST_P(StorageTest, AsyncCallsAnswerOnce) {
  absl::Notification wrote, read;
  absl::StatusOr<etcdserverpb::TxnResponse> txn;
  absl::StatusOr<etcdserverpb::RangeResponse> got;
  store_->TxnAsync(apiserver::storage::CreateTxn("/k", "v"), [&](auto r) {
    txn = std::move(r);
    wrote.Notify();
  });
  ASSERT_TRUE(wrote.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(txn.ok() && txn->succeeded()) << txn.status();
  store_->GetAsync("/k", [&](auto r) {
    got = std::move(r);
    read.Notify();
  });
  ASSERT_TRUE(read.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(got.ok() && got->kvs_size() == 1) << got.status();
  EXPECT_EQ(got->kvs(0).mod_revision(), txn->header().revision());
}

TEST_P(StorageTest, AWatchFromARevisionSendsEveryLaterEventOfItsRangeInOrder) {
  const int64_t from = Put("/r/a", "1");
  const int64_t changed = Put("/r/a", "2");
  Put("/s/elsewhere", "x");
  etcdserverpb::TxnRequest both = apiserver::storage::PutTxn("/r/b", "1");
  both.MergeFrom(apiserver::storage::PutTxn("/r/c", "1"));
  const int64_t together = Write(both);
  auto watch = store_->Watch(apiserver::storage::PrefixWatch("/r/", from, /*prev_kv=*/true));
  etcdserverpb::WatchResponse created;
  ASSERT_TRUE(watch->Read(&created));
  EXPECT_TRUE(created.created());
  const int64_t deleted = Write(apiserver::storage::DeleteKeyTxn("/r/a"));
  const std::string history = Events(*watch, 5, /*with_prev=*/true);
  // (How responses group revisions is the store's choice; a revision is never split.)
  EXPECT_NE(history.find("PUT /r/b" + At(together) + " PUT /r/c" + At(together)), std::string::npos)
      << history;
  std::string flat = history;
  for (size_t at; (at = flat.find(" | ")) != std::string::npos;) flat.replace(at, 3, " ");
  EXPECT_EQ(flat, "PUT /r/a" + At(from) + " PUT /r/a" + At(changed) + "(was 1) PUT /r/b" +
                      At(together) + " PUT /r/c" + At(together) + " DELETE /r/a" + At(deleted) +
                      "(was 2)");
}

TEST_P(StorageTest, AWatchFromNowSendsOnlyWhatIsWrittenAfterIt) {
  Put("/r/before", "x");
  auto watch = store_->Watch(apiserver::storage::PrefixWatch("/r/", 0, /*prev_kv=*/false));
  etcdserverpb::WatchResponse created;
  ASSERT_TRUE(watch->Read(&created));
  ASSERT_TRUE(created.created());
  const int64_t after = Put("/r/after", "x");
  EXPECT_EQ(Events(*watch, 1), "PUT /r/after" + At(after));
}

TEST_P(StorageTest, AWatchEndsWhenCancelledOrPastItsDeadline) {
  auto early = store_->Watch(apiserver::storage::PrefixWatch("/r/", 0, false));
  early->Cancel();
  etcdserverpb::WatchResponse resp;
  EXPECT_FALSE(early->Read(&resp)) << "cancelled before it started";

  auto blocked = store_->Watch(apiserver::storage::PrefixWatch("/r/", 0, false));
  ASSERT_TRUE(blocked->Read(&resp));
  bool read = true;
  std::thread reader([&] {
    etcdserverpb::WatchResponse r;
    read = blocked->Read(&r);
  });
  blocked->Cancel();
  reader.join();
  EXPECT_FALSE(read) << "cancelled while it waited";

  auto timed =
      store_->Watch(apiserver::storage::PrefixWatch("/r/", 0, false), absl::Milliseconds(100));
  ASSERT_TRUE(timed->Read(&resp));
  EXPECT_FALSE(timed->Read(&resp)) << "past its deadline";
}

TEST_P(StorageTest, CompactionDropsTheHistoryBeforeARevisionAndSaysSo) {
  std::vector<int64_t> revs;
  for (int i = 0; i < 5; ++i) revs.push_back(Put("/r/k", std::to_string(i)));
  ASSERT_TRUE(store_->Compact(revs[2]).ok());
  for (int64_t again : {revs[2], revs[1]}) {
    absl::Status st = store_->Compact(again);
    EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange) << st;
    EXPECT_EQ(st.message(), "etcdserver: mvcc: required revision has been compacted");
  }
  absl::Status future = store_->Compact(revs[4] + 10);
  EXPECT_EQ(future.code(), absl::StatusCode::kOutOfRange) << future;
  EXPECT_EQ(future.message(), "etcdserver: mvcc: required revision is a future revision");

  auto old = store_->Watch(apiserver::storage::PrefixWatch("/r/", revs[1], false));
  etcdserverpb::WatchResponse resp;
  ASSERT_TRUE(old->Read(&resp));
  EXPECT_TRUE(resp.created());
  ASSERT_TRUE(old->Read(&resp));
  EXPECT_TRUE(resp.canceled());
  EXPECT_EQ(resp.compact_revision(), revs[2]);

  auto kept = store_->Watch(apiserver::storage::PrefixWatch("/r/", revs[3], false));
  EXPECT_EQ(Events(*kept, 2), "PUT /r/k" + At(revs[3]) + " PUT /r/k" + At(revs[4]));
  auto now = store_->Get("/r/k");
  ASSERT_TRUE(now.ok() && now->kvs_size() == 1);
  EXPECT_EQ(now->kvs(0).value(), "4");
}

TEST_P(StorageTest, ATransactionLargerThanTheStoreTakesIsRefusedInEtcdsWords) {
  const std::string big(1600 << 10, 'x');
  auto r = store_->Txn(apiserver::storage::PutTxn("/big", big));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "etcdserver: request is too large");
  EXPECT_TRUE(Put("/small", "x") > 0);
}

}  // namespace mkube::testing
