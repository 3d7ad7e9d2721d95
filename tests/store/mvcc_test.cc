#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "rocksdb/db.h"
#include "rocksdb/table.h"
#include "store/mvcc/codec.h"
#include "store/mvcc/kv_store.h"
#include "store/mvcc/reader.h"
#include "store/mvcc/validate.h"
#include "tests/store/store_fixture.h"
#include "tests/util/eventually.h"

namespace mkube::store::mvcc {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using etcdserverpb::TxnRequest;

class MvccTest : public StoreFixture {};

TEST_F(MvccTest, RevisionsVersionsAndCreateRevisions) {
  EXPECT_EQ(store_->Revision(), 1);
  EXPECT_EQ(*Put("a", "1"), 2);
  EXPECT_EQ(*Put("a", "2"), 3);
  EXPECT_EQ(*Put("b", "1"), 4);
  auto r = Range("a");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->kvs_size(), 1);
  EXPECT_EQ(r->kvs(0).create_revision(), 2);
  EXPECT_EQ(r->kvs(0).mod_revision(), 3);
  EXPECT_EQ(r->kvs(0).version(), 2);
  EXPECT_EQ(r->header().revision(), 4);

  EXPECT_EQ(*Delete("a"), 1);
  EXPECT_EQ(store_->Revision(), 5);
  // A delete of nothing writes nothing and takes no revision.
  EXPECT_EQ(*Delete("a"), 0);
  EXPECT_EQ(store_->Revision(), 5);
  EXPECT_EQ(*Put("a", "3"), 6);
  r = Range("a");
  EXPECT_EQ(r->kvs(0).version(), 1) << "version restarts after a delete";
  EXPECT_EQ(r->kvs(0).create_revision(), 6);
}

// A write whose caller may wait is committed on the caller's thread when the writer thread is
// idle (done runs before Txn returns); others go to the writer thread. Revisions stay in order.
TEST_F(MvccTest, ALoneWriteMayBeCommittedOnTheCallersThread) {
  auto put = [](const std::string& key) {
    etcdserverpb::TxnRequest t;
    auto* p = t.add_success()->mutable_request_put();
    p->set_key(key);
    p->set_value("v");
    return t;
  };
  const auto me = std::this_thread::get_id();
  int64_t last = 0;
  bool inline_seen = false;
  // The writer thread is idle once it waits for work: retry until it does. A write that went
  // to the writer thread is waited for, so each try starts with an empty queue.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int i = 0; !inline_seen && std::chrono::steady_clock::now() < deadline; ++i) {
    auto ran_on = std::make_shared<std::promise<std::pair<std::thread::id, int64_t>>>();
    auto result = ran_on->get_future();
    store_->Txn(
        put("inline" + std::to_string(i)),
        [ran_on](absl::StatusOr<etcdserverpb::TxnResponse> r) {
          EXPECT_TRUE(r.ok()) << r.status();
          // Answered even on failure, so that the test fails rather than waits forever.
          ran_on->set_value({std::this_thread::get_id(), r.ok() ? r->header().revision() : -1});
        },
        /*commit_if_idle=*/true);
    const bool answered_before_return =
        result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    const auto [thread, revision] = result.get();
    EXPECT_GT(revision, last);
    last = revision;
    if (thread == me) {
      EXPECT_TRUE(answered_before_return);
      inline_seen = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ASSERT_TRUE(inline_seen);
  // Without leave, the writer thread commits it.
  std::promise<std::thread::id> on;
  store_->Txn(put("queued"), [&](absl::StatusOr<etcdserverpb::TxnResponse> r) {
    EXPECT_TRUE(r.ok());
    EXPECT_GT(r->header().revision(), last);
    on.set_value(std::this_thread::get_id());
  });
  EXPECT_NE(on.get_future().get(), me);
  auto got = Range("queued", "", 0);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->kvs_size(), 1);
}

TEST_F(MvccTest, RangeAtPastRevisionsSeesHistory) {
  ASSERT_TRUE(Put("k", "v1").ok());   // 2
  ASSERT_TRUE(Put("k", "v2").ok());   // 3
  ASSERT_TRUE(Delete("k").ok());      // 4
  ASSERT_TRUE(Put("k", "v3").ok());   // 5
  ASSERT_TRUE(Put("k2", "x").ok());   // 6
  const std::vector<std::pair<int64_t, std::string>> expect = {
      {1, "<none>"}, {2, "v1"}, {3, "v2"}, {4, "<none>"}, {5, "v3"}, {6, "v3"}, {0, "v3"}};
  for (const auto& [rev, value] : expect) EXPECT_EQ(ValueAt("k", rev), value) << "rev " << rev;
  EXPECT_EQ(ValueAt("k", 7), kErrFutureRev);
  auto all = Range("k", std::string("\0", 1), 5);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->kvs_size(), 1) << "k2 did not exist yet at 5";
}

TEST_F(MvccTest, RangeOptions) {
  for (auto k : {"p/a", "p/b", "p/c", "p/d", "q"}) ASSERT_TRUE(Put(k, std::string("v-") + k).ok());
  ASSERT_TRUE(Put("p/b", "v-p/b2").ok());
  struct Case {
    const char* name;
    RangeRequest req;
    std::vector<std::string> keys;
    int64_t count;
    bool more;
  };
  auto req = [](std::string k, std::string end) {
    RangeRequest r;
    r.set_key(k);
    r.set_range_end(end);
    return r;
  };
  std::vector<Case> cases;
  cases.push_back({"prefix", req("p/", "p0"), {"p/a", "p/b", "p/c", "p/d"}, 4, false});
  cases.push_back({"from key", req("p/c", std::string("\0", 1)), {"p/c", "p/d", "q"}, 3, false});
  {
    auto r = req("p/", "p0");
    r.set_limit(2);
    cases.push_back({"limit cuts and counts all", r, {"p/a", "p/b"}, 4, true});
  }
  {
    auto r = req("p/", "p0");
    r.set_sort_order(RangeRequest::DESCEND);
    r.set_sort_target(RangeRequest::MOD);
    r.set_limit(1);
    cases.push_back({"sort by mod descending", r, {"p/b"}, 4, true});
  }
  {
    auto r = req("p/", "p0");
    r.set_sort_order(RangeRequest::DESCEND);
    cases.push_back({"keys descending", r, {"p/d", "p/c", "p/b", "p/a"}, 4, false});
  }
  {
    auto r = req("p/", "p0");
    r.set_min_mod_revision(4);
    cases.push_back({"min mod revision", r, {"p/b", "p/c", "p/d"}, 4, false});
  }
  {
    auto r = req("p/", "p0");
    r.set_count_only(true);
    cases.push_back({"count only", r, {}, 4, false});
  }
  cases.push_back({"empty interval", req("z", "a"), {}, 0, false});
  for (const auto& c : cases) {
    auto r = store_->Range(c.req);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status();
    std::vector<std::string> keys;
    for (const auto& kv : r->kvs()) keys.push_back(kv.key());
    EXPECT_EQ(keys, c.keys) << c.name;
    EXPECT_EQ(r->count(), c.count) << c.name;
    EXPECT_EQ(r->more(), c.more) << c.name;
  }
  RangeRequest keys_only = req("p/a", "");
  keys_only.set_keys_only(true);
  auto r = store_->Range(keys_only);
  ASSERT_EQ(r->kvs_size(), 1);
  EXPECT_EQ(r->kvs(0).value(), "");
}

TEST_F(MvccTest, TxnCompares) {
  leases_.ids.insert(77);
  ASSERT_TRUE(Put("k", "v", 77).ok());  // rev 2, version 1
  ASSERT_TRUE(Put("k", "w", 77).ok());  // rev 3, version 2
  struct Case {
    const char* name;
    Compare cmp;
    bool expect;
  };
  auto cmp = [](std::string key, Compare::CompareTarget t, Compare::CompareResult res) {
    Compare c;
    c.set_key(key);
    c.set_target(t);
    c.set_result(res);
    return c;
  };
  std::vector<Case> cases;
  auto add = [&](const char* name, Compare c, bool e) { cases.push_back({name, c, e}); };
  { auto c = cmp("k", Compare::VERSION, Compare::EQUAL); c.set_version(2); add("version equal", c, true); }
  { auto c = cmp("k", Compare::VERSION, Compare::GREATER); c.set_version(2); add("version greater", c, false); }
  { auto c = cmp("k", Compare::CREATE, Compare::EQUAL); c.set_create_revision(2); add("create equal", c, true); }
  { auto c = cmp("k", Compare::MOD, Compare::LESS); c.set_mod_revision(4); add("mod less", c, true); }
  { auto c = cmp("k", Compare::MOD, Compare::NOT_EQUAL); c.set_mod_revision(3); add("mod not equal", c, false); }
  { auto c = cmp("k", Compare::VALUE, Compare::EQUAL); c.set_value("w"); add("value equal", c, true); }
  { auto c = cmp("k", Compare::VALUE, Compare::GREATER); c.set_value("v"); add("value greater", c, true); }
  { auto c = cmp("k", Compare::LEASE, Compare::EQUAL); c.set_lease(77); add("lease equal", c, true); }
  { auto c = cmp("missing", Compare::CREATE, Compare::EQUAL); c.set_create_revision(0); add("missing key has create 0", c, true); }
  { auto c = cmp("missing", Compare::VERSION, Compare::EQUAL); c.set_version(0); add("missing key has version 0", c, true); }
  { auto c = cmp("missing", Compare::VALUE, Compare::EQUAL); c.set_value(""); add("missing key matches no value", c, false); }
  { auto c = cmp("a", Compare::VERSION, Compare::GREATER); c.set_version(0); c.set_range_end("z"); add("range compare over all keys", c, true); }
  for (const auto& c : cases) {
    TxnRequest t;
    *t.add_compare() = c.cmp;
    auto r = Txn(t);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status();
    EXPECT_EQ(r->succeeded(), c.expect) << c.name;
  }
  EXPECT_EQ(store_->Revision(), 3) << "read-only txns take no revision";
}

TEST_F(MvccTest, TxnBranchesWriteOneRevisionAndSeeTheirOwnWrites) {
  ASSERT_TRUE(Put("x", "1").ok());  // 2
  TxnRequest t;
  auto* c = t.add_compare();
  c->set_key("x");
  c->set_target(Compare::VALUE);
  c->set_value("1");
  auto* p1 = t.add_success()->mutable_request_put();
  p1->set_key("y");
  p1->set_value("from-success");
  t.add_success()->mutable_request_range()->set_key("y");
  auto* nested = t.add_success()->mutable_request_txn();
  auto* p2 = nested->add_success()->mutable_request_put();
  p2->set_key("z");
  p2->set_value("nested");
  t.add_failure()->mutable_request_delete_range()->set_key("x");
  auto r = Txn(t);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->succeeded());
  EXPECT_EQ(r->header().revision(), 3);
  ASSERT_EQ(r->responses_size(), 3);
  ASSERT_EQ(r->responses(1).response_range().kvs_size(), 1);
  EXPECT_EQ(r->responses(1).response_range().kvs(0).value(), "from-success");
  EXPECT_TRUE(r->responses(2).response_txn().succeeded());
  EXPECT_EQ(ValueAt("z"), "nested");
  EXPECT_EQ(Range("y")->kvs(0).mod_revision(), 3);
  EXPECT_EQ(Range("z")->kvs(0).mod_revision(), 3);
  EXPECT_EQ(store_->Revision(), 3);
}

TEST_F(MvccTest, TxnErrorsLeaveNothingBehind) {
  TxnRequest t;
  auto* p = t.add_success()->mutable_request_put();
  p->set_key("a");
  p->set_value("1");
  auto* bad = t.add_success()->mutable_request_put();
  bad->set_key("b");
  bad->set_lease(12345);  // no such lease
  auto r = Txn(t);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), kErrLeaseNotFound);
  EXPECT_EQ(ValueAt("a"), "<none>");
  EXPECT_EQ(store_->Revision(), 1);

  TxnRequest ignore;
  auto* iv = ignore.add_success()->mutable_request_put();
  iv->set_key("nothing-here");
  iv->set_ignore_value(true);
  EXPECT_EQ(Txn(ignore).status().message(), kErrKeyNotFound);
}

TEST_F(MvccTest, ValidationGivesEtcdErrors) {
  struct Case {
    const char* name;
    TxnRequest req;
    std::string error;
  };
  std::vector<Case> cases;
  {
    TxnRequest t;
    t.add_success()->mutable_request_put()->set_key("a");
    t.add_success()->mutable_request_put()->set_key("a");
    cases.push_back({"two puts of one key", t, kErrDuplicateKey});
  }
  {
    TxnRequest t;
    t.add_success()->mutable_request_put()->set_key("a/1");
    auto* d = t.add_success()->mutable_request_delete_range();
    d->set_key("a/");
    d->set_range_end("a0");
    cases.push_back({"a put inside a deleted range", t, kErrDuplicateKey});
  }
  {
    TxnRequest t;
    t.add_success()->mutable_request_put()->set_key("a");
    t.add_failure()->mutable_request_put()->set_key("a");
    cases.push_back({"the same key in both branches is fine", t, ""});
  }
  {
    TxnRequest t;
    for (int i = 0; i < 129; ++i) t.add_success()->mutable_request_put()->set_key("k" + std::to_string(i));
    cases.push_back({"too many operations", t, kErrTooManyOps});
  }
  {
    TxnRequest t;
    t.add_success()->mutable_request_put()->set_key("");
    cases.push_back({"empty key", t, kErrEmptyKey});
  }
  {
    TxnRequest t;
    auto* p = t.add_success()->mutable_request_put();
    p->set_key("a");
    p->set_ignore_value(true);
    p->set_value("x");
    cases.push_back({"ignore_value with a value", t, kErrValueProvided});
  }
  for (const auto& c : cases) {
    auto st = ValidateTxn(c.req, 128);
    if (c.error.empty()) {
      EXPECT_TRUE(st.ok()) << c.name << ": " << st;
    } else {
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.name;
      EXPECT_EQ(st.message(), c.error) << c.name;
    }
  }
}

TEST_F(MvccTest, CompactionRemovesHistoryButKeepsTheVisibleState) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Put("k", "v" + std::to_string(i)).ok());  // 2..6
  ASSERT_TRUE(Put("gone", "x").ok());  // 7
  ASSERT_TRUE(Delete("gone").ok());    // 8
  ASSERT_TRUE(Put("other", "o").ok());  // 9

  EXPECT_EQ(Compact(100, false).message(), kErrFutureRev);
  ASSERT_TRUE(Compact(8, /*physical=*/true).ok());
  EXPECT_EQ(store_->CompactedRevision(), 8);
  EXPECT_EQ(ValueAt("k", 7), kErrCompacted);
  EXPECT_EQ(ValueAt("k", 8), "v4");
  EXPECT_EQ(ValueAt("gone", 8), "<none>");
  EXPECT_EQ(ValueAt("other"), "o");
  EXPECT_EQ(Compact(8, false).message(), kErrCompacted);
  EXPECT_EQ(Compact(5, false).message(), kErrCompacted);

  // Events from the compaction point on are still there, older ones are not.
  std::vector<mvccpb::Event> events;
  auto last = store_->ReadEvents(8, 9, 100, &events);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, 9);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type(), mvccpb::Event::DELETE);
  EXPECT_EQ(events[1].kv().key(), "other");

  // Survives a restart.
  Open();
  EXPECT_EQ(store_->CompactedRevision(), 8);
  EXPECT_EQ(ValueAt("k", 7), kErrCompacted);
  EXPECT_EQ(ValueAt("k"), "v4");
  EXPECT_EQ(store_->Revision(), 9);
}

// A store's cache-only read of what is in memory answers as a full read does.
TEST_F(MvccTest, ACacheOnlyReadOfWhatIsInMemoryAnswers) {
  ASSERT_TRUE(Put("k/a", "1").ok());
  ASSERT_TRUE(Put("k/b", "2").ok());
  etcdserverpb::RangeRequest prefix;
  prefix.set_key("k/");
  prefix.set_range_end("k0");
  auto cached = store_->Range(prefix, /*cache_only=*/true);
  ASSERT_TRUE(cached.ok()) << cached.status();
  ASSERT_EQ(cached->kvs_size(), 2);
  EXPECT_EQ(cached->kvs(1).value(), "2");
}

// Loading a version that is only in a file, with reads limited to memory (no block cache
// here, so nothing read from a file stays in memory): NotCached, which nothing else is.
TEST(LoadValuesTest, AReadLimitedToMemoryNeverWaitsForTheDisk) {
  mkube::testing::TempDir dir;
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::BlockBasedTableOptions table;
  table.no_block_cache = true;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, dir.Sub("db"), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  mvccpb::KeyValue kv;
  kv.set_key("k");
  kv.set_value("v");
  kv.set_mod_revision(2);
  std::string stored;
  AppendHistoryPut(&stored, kv);
  const Revision rev{2, 0};
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), EncodeRevision(rev), stored).ok());
  Found found{.kv = {}, .rev = rev};
  found.kv.set_key("k");
  auto load = [&](rocksdb::ReadTier tier) {
    rocksdb::ReadOptions ro;
    ro.read_tier = tier;
    found.loaded = false;
    return LoadValues(db.get(), db->DefaultColumnFamily(), ro, {&found},
                      absl::NotFoundError("missing"));
  };
  EXPECT_TRUE(load(rocksdb::kBlockCacheTier).ok());  // still in the memtable
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  const absl::Status st = load(rocksdb::kBlockCacheTier);
  EXPECT_TRUE(IsNotCached(st)) << st;
  EXPECT_FALSE(found.loaded);
  ASSERT_TRUE(load(rocksdb::kReadAllTier).ok());
  EXPECT_EQ(found.kv.value(), "v");
  EXPECT_FALSE(IsNotCached(absl::UnavailableError("mkube-store: the read needs the disk")));
}

TEST_F(MvccTest, EventsFromDiskEqualEventsFromMemory) {
  ASSERT_TRUE(Put("a", "1").ok());
  ASSERT_TRUE(Put("a", "2").ok());
  TxnRequest t;
  t.add_success()->mutable_request_put()->set_key("b");
  t.add_success()->mutable_request_delete_range()->set_key("a");
  ASSERT_TRUE(Txn(t).ok());
  std::vector<mvccpb::Event> cached;
  ASSERT_EQ(*store_->ReadEvents(2, 4, 100, &cached), 4);
  Open();  // empty cache: history comes from RocksDB
  std::vector<mvccpb::Event> disk;
  ASSERT_EQ(*store_->ReadEvents(2, 4, 100, &disk), 4);
  ASSERT_EQ(cached.size(), 4u);
  ASSERT_EQ(disk.size(), cached.size());
  for (size_t i = 0; i < disk.size(); ++i) {
    EXPECT_EQ(disk[i].DebugString(), cached[i].DebugString()) << i;
  }
  EXPECT_EQ(disk[1].prev_kv().value(), "1");
  EXPECT_EQ(disk[3].type(), mvccpb::Event::DELETE);
  EXPECT_EQ(disk[3].kv().mod_revision(), 4);
  EXPECT_EQ(disk[3].prev_kv().value(), "2");

  // Whole revisions only: a limit of one event still returns both events of revision 4.
  std::vector<mvccpb::Event> limited;
  EXPECT_EQ(*store_->ReadEvents(4, 4, 1, &limited), 4);
  EXPECT_EQ(limited.size(), 2u);
}

TEST_F(MvccTest, StateSurvivesReopen) {
  ASSERT_TRUE(Put("a", "1").ok());
  ASSERT_TRUE(Put("b", "2").ok());
  const uint64_t member = store_->member_id();
  Open();
  EXPECT_EQ(store_->Revision(), 3);
  EXPECT_EQ(ValueAt("a"), "1");
  EXPECT_EQ(ValueAt("a", 2), "1");
  EXPECT_EQ(store_->member_id(), member);
  EXPECT_EQ(*Put("c", "3"), 4);
}

// The writer's queue is bounded in requests and in bytes: beyond either, a request is refused
// at once (etcd's "too many requests") and the ones queued before it still commit.
TEST_F(MvccTest, AFullWriteQueueRefusesAtOnce) {
  struct Case {
    const char* name;
    size_t max_requests;
    size_t max_bytes;
    std::vector<size_t> value_sizes;  // queued in order while the writer is held
    std::vector<bool> accepted;
  };
  const std::vector<Case> cases = {
      {"the third request is one too many", 2, SIZE_MAX, {1, 1, 1}, {true, true, false}},
      {"a request that would pass the bytes is refused, a smaller one after it is not",
       SIZE_MAX, 1000, {500, 600, 10}, {true, false, true}},
      {"an empty queue takes a request larger than the bytes, and then nothing more",
       SIZE_MAX, 1000, {1500, 10}, {true, false}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StoreOptions options;
    options.max_queued_requests = c.max_requests;
    options.max_queued_bytes = c.max_bytes;
    Open(options);
    // The writer is held inside an exclusive op, so everything after it stays queued.
    std::promise<void> started, release;
    std::promise<absl::Status> held_done;
    store_->Exclusive(
        [&, f = release.get_future().share()](WriteGroup&) {
          started.set_value();
          f.wait();
          return absl::OkStatus();
        },
        [&](absl::Status st) { held_done.set_value(st); });
    started.get_future().wait();
    std::vector<std::future<absl::StatusOr<etcdserverpb::TxnResponse>>> results;
    std::vector<std::unique_ptr<std::promise<absl::StatusOr<etcdserverpb::TxnResponse>>>> ps;
    for (size_t i = 0; i < c.value_sizes.size(); ++i) {
      TxnRequest t;
      auto* put = t.add_success()->mutable_request_put();
      put->set_key("k" + std::to_string(i));
      put->set_value(std::string(c.value_sizes[i], 'v'));
      ps.push_back(std::make_unique<std::promise<absl::StatusOr<etcdserverpb::TxnResponse>>>());
      results.push_back(ps.back()->get_future());
      auto* p = ps.back().get();
      store_->Txn(t, [p](absl::StatusOr<etcdserverpb::TxnResponse> r) { p->set_value(r); });
      // A refusal is answered before Txn returns; the others wait for the writer.
      const bool answered =
          results.back().wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      EXPECT_EQ(answered, !c.accepted[i]) << i;
    }
    release.set_value();
    EXPECT_TRUE(held_done.get_future().get().ok());
    for (size_t i = 0; i < results.size(); ++i) {
      auto r = results[i].get();
      if (c.accepted[i]) {
        EXPECT_TRUE(r.ok()) << i << ": " << r.status();
      } else {
        EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << i;
        EXPECT_EQ(r.status().message(), kErrTooManyRequests) << i;
      }
    }
    // The queue takes requests again once it has drained.
    EXPECT_TRUE(Put("after", "x").ok());
  }
}

// Writers, readers and compactions at once: every read at a revision the store still has gives
// each key's version of that revision (value, version and revisions agreeing), the same twice;
// reads below the compaction point are refused, never answered wrongly.
TEST_F(MvccTest, ReadsStayExactWhileCompactionRuns) {
  constexpr int kKeys = 20;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> wrong{0}, reads{0}, refused{0};
  std::thread writer([&] {
    std::vector<int> puts(kKeys, 0);
    for (int i = 0; !stop; ++i) {
      const int k = i % kKeys;
      const std::string key = "k" + std::to_string(k);
      ASSERT_TRUE(Put(key, key + "#" + std::to_string(++puts[k])).ok());
    }
  });
  std::thread compactor([&] {
    while (!stop) {
      const int64_t rev = store_->Revision() - 30;
      if (rev > store_->CompactedRevision()) Compact(rev, /*physical=*/false).IgnoreError();
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  });
  auto check = [&](int64_t rev) -> std::optional<std::string> {
    auto r = Range("k", "l", rev);
    if (!r.ok()) {
      if (r.status().message() != kErrCompacted) ++wrong;
      ++refused;
      return std::nullopt;
    }
    const int64_t at = rev ? rev : r->header().revision();
    // Keys are only added (k0..k19 at revisions 2..21), never deleted.
    if (r->kvs_size() != std::min<int64_t>(kKeys, at - 1)) ++wrong;
    std::string seen;
    for (const auto& kv : r->kvs()) {
      if (kv.value() != kv.key() + "#" + std::to_string(kv.version()) || kv.mod_revision() > at ||
          kv.create_revision() > kv.mod_revision()) {
        ++wrong;
      }
      seen += kv.key() + "=" + kv.value() + "@" + std::to_string(kv.mod_revision()) + " ";
    }
    ++reads;
    return seen;
  };
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; !stop; ++i) {
        const int64_t now = store_->Revision();
        check(0);
        // From just behind the writer to beyond the compaction point (30 behind).
        const int64_t past = now - 5 - i % 50;
        if (past < 2) continue;
        auto first = check(past);
        auto second = check(past);
        if (first && second && *first != *second) ++wrong;
      }
    });
  }
  // Until enough has happened, however slow the machine: history well past the compaction
  // distance, compactions done, reads answered and refused.
  mkube::testing::Eventually(
      [&] { return store_->Revision() > 300 && reads > 1000 && refused > 0; },
      std::chrono::seconds(60));
  stop = true;
  writer.join();
  compactor.join();
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(reads.load(), 1000);
  EXPECT_GT(refused.load(), 0) << "reads below the compaction point were tried";
  EXPECT_GT(store_->CompactedRevision(), 0) << "compaction ran";
  std::printf("reads %lld, refused as compacted %lld, revision %lld, compacted %lld\n",
              static_cast<long long>(reads.load()), static_cast<long long>(refused.load()),
              static_cast<long long>(store_->Revision()),
              static_cast<long long>(store_->CompactedRevision()));
}

// A store written in the first format (three key families, no format record) is rewritten
// into the history family at start, compacted history included, and the old families go.
TEST_F(MvccTest, AStoreOfTheFirstFormatIsMigrated) {
  store_.reset();
  const std::string path = dir_.Sub("db1");
  {
    rocksdb::Options options;
    options.create_if_missing = true;
    options.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {{rocksdb::kDefaultColumnFamilyName, {}},
                                                        {"rev", {}},
                                                        {"key", {}},
                                                        {"cur", {}},
                                                        {"meta", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> h;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(options, path, cfs, &h, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    auto kv = [](const std::string& key, const std::string& value, int64_t create, int64_t mod,
                 int64_t version) {
      mvccpb::KeyValue out;
      out.set_key(key);
      out.set_value(value);
      out.set_create_revision(create);
      out.set_mod_revision(mod);
      out.set_version(version);
      return out;
    };
    auto history = [&](const mvccpb::KeyValue& v, Revision rev, bool with_revision_entry) {
      mvccpb::KeyValue no_key = v;
      no_key.clear_key();
      ASSERT_TRUE(
          db->Put({}, h[2], EncodeKeyEntry(v.key(), rev.main), "p" + no_key.SerializeAsString())
              .ok());
      if (with_revision_entry) {
        ASSERT_TRUE(db->Put({}, h[1], EncodeRevision(rev), "p" + v.key()).ok());
      }
    };
    auto meta = [&](const std::string& k, int64_t v) {
      std::string enc;
      AppendBigEndian64(&enc, static_cast<uint64_t>(v));
      ASSERT_TRUE(db->Put({}, h[4], k, enc).ok());
    };
    // Revision 2: a=a1. 3: a=a2 and b=b1 in one txn. 4: a deleted. 5: c=c1.
    // Compacted at 3: the entries of revisions below 3 are gone, a=a1 from history too.
    history(kv("a", "a2", 2, 3, 2), {3, 0}, true);
    history(kv("b", "b1", 3, 3, 1), {3, 1}, true);
    ASSERT_TRUE(db->Put({}, h[2], EncodeKeyEntry("a", 4), "d").ok());
    ASSERT_TRUE(db->Put({}, h[1], EncodeRevision({4, 0}), "da").ok());
    history(kv("c", "c1", 5, 5, 1), {5, 0}, true);
    // An old version compaction kept without its revision entry: z=z1 at 2, never changed.
    history(kv("z", "z1", 2, 2, 1), {2, 0}, false);
    std::string identity(16, '\x07');
    ASSERT_TRUE(db->Put({}, h[4], "I", identity).ok());
    meta("R", 5);
    meta("C", 3);
    meta("F", 3);
    meta("X", 4);
    for (auto* handle : h) ASSERT_TRUE(db->DestroyColumnFamilyHandle(handle).ok());
  }
  StoreOptions options;
  options.data_dir = path;
  auto opened = KvStore::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  store_ = std::move(*opened);
  store_->SetLeaseView(&leases_);
  auto check = [&] {
    EXPECT_EQ(store_->Revision(), 5);
    EXPECT_EQ(store_->CompactedRevision(), 3);
    EXPECT_EQ(ValueAt("a", 3), "a2");
    EXPECT_EQ(ValueAt("a"), "<none>");
    EXPECT_EQ(ValueAt("b"), "b1");
    EXPECT_EQ(ValueAt("c", 4), "<none>");
    EXPECT_EQ(ValueAt("c"), "c1");
    EXPECT_EQ(ValueAt("z", 3), "z1");
    EXPECT_EQ(ValueAt("a", 2), kErrCompacted);
    auto r = Range("a", "zz");
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->kvs_size(), 3);
    EXPECT_EQ(r->kvs(0).create_revision(), 3);
    EXPECT_EQ(r->kvs(2).key(), "z");
    // History from the compaction point: both events of revision 3 in order, the delete
    // with its previous version.
    std::vector<mvccpb::Event> events;
    ASSERT_EQ(*store_->ReadEvents(3, 5, 100, &events), 5);
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[0].kv().key(), "a");
    EXPECT_EQ(events[1].kv().key(), "b");
    EXPECT_EQ(events[2].type(), mvccpb::Event::DELETE);
    EXPECT_EQ(events[2].prev_kv().value(), "a2");
    EXPECT_EQ(events[3].kv().value(), "c1");
  };
  check();
  EXPECT_EQ(*Put("a", "a3"), 6);
  store_.reset();
  std::vector<std::string> families;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &families).ok());
  for (const char* old : {"rev", "key", "cur"}) {
    EXPECT_EQ(std::count(families.begin(), families.end(), old), 0) << old;
  }
  // The second start reads the new format as it is.
  opened = KvStore::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  store_ = std::move(*opened);
  store_->SetLeaseView(&leases_);
  EXPECT_EQ(ValueAt("a"), "a3");
  EXPECT_EQ(ValueAt("z"), "z1");
  EXPECT_EQ(ValueAt("a", 5), "<none>");
}

}  // namespace
}  // namespace mkube::store::mvcc
