// Crash safety: concurrent writers, kill -9 at random moments, restart. Every acknowledged
// write must survive with its revision, the revision must never go back, and a watcher that
// resumes from its last revision must see every revision once, with no gap.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "tests/util/etcd_client.h"
#include "tests/util/store_process.h"

namespace mkube::testing {
namespace {

constexpr int kRounds = 24;
constexpr int kWriters = 8;

struct Acked {
  std::mutex mu;
  std::map<std::string, int64_t> revisions;  // key -> revision the store acknowledged
  int64_t max_revision = 0;
};

// Watches everything from `from`, checking that revisions arrive consecutively. Returns the
// last revision seen when the stream breaks (the store was killed).
int64_t WatchUntilBroken(const std::string& address, int64_t from, std::atomic<bool>* failed,
                         std::string* why, std::atomic<int64_t>* progress = nullptr) {
  EtcdClient client(address);
  WatchStream stream(client);
  etcdserverpb::WatchCreateRequest create;
  create.set_key(std::string(1, '\0'));
  create.set_range_end(std::string(1, '\0'));
  create.set_start_revision(from);
  stream.Create(create);
  int64_t last = from - 1;
  etcdserverpb::WatchResponse resp;
  while (stream.Read(&resp)) {
    if (resp.canceled()) {
      *why = "watch canceled: compact_revision " + std::to_string(resp.compact_revision());
      *failed = true;
      break;
    }
    for (const auto& ev : resp.events()) {
      const int64_t rev = ev.kv().mod_revision();
      if (rev != last + 1) {
        *why = "watch saw revision " + std::to_string(rev) + " after " + std::to_string(last);
        *failed = true;
        return last;
      }
      last = rev;
    }
    if (progress) *progress = last;
  }
  return last;
}

TEST(StoreCrashTest, AcknowledgedWritesSurviveKillNine) {
  TempDir dir;
  StoreProcess store(dir.Sub("data"), dir.Sub("store.log"));
  const unsigned seed = 20261129;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(20, 250);
  Acked acked;
  int64_t watched = 1;  // last revision the watcher has seen
  int64_t previous_revision = 1;
  size_t total_acked = 0;

  for (int round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(store.Start().ok()) << "round " << round;
    EtcdClient check(store.address());

    // After every restart: the revision never went back and every ack is there.
    auto head = check.Get("nothing-here");
    ASSERT_TRUE(head.ok()) << head.status();
    const int64_t revision = head->header().revision();
    ASSERT_GE(revision, previous_revision) << "revision went back in round " << round;
    ASSERT_GE(revision, acked.max_revision) << "round " << round;
    {
      etcdserverpb::RangeRequest all;
      all.set_key("k/");
      all.set_range_end("k0");
      auto r = check.Range(all);
      ASSERT_TRUE(r.ok()) << r.status();
      std::map<std::string, int64_t> present;
      for (const auto& kv : r->kvs()) present[kv.key()] = kv.mod_revision();
      std::lock_guard<std::mutex> lock(acked.mu);
      for (const auto& [key, rev] : acked.revisions) {
        auto it = present.find(key);
        ASSERT_NE(it, present.end()) << "acknowledged " << key << " lost (seed " << seed << ")";
        ASSERT_EQ(it->second, rev) << key;
      }
      total_acked = acked.revisions.size();
    }

    std::atomic<bool> stop{false}, watch_failed{false};
    std::string watch_error;
    std::thread watcher([&] {
      watched = WatchUntilBroken(store.address(), watched + 1, &watch_failed, &watch_error);
    });
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w] {
        EtcdClient client(store.address());
        for (int seq = 0; !stop; ++seq) {
          const std::string key =
              "k/" + std::to_string(round) + "/" + std::to_string(w) + "/" + std::to_string(seq);
          auto r = client.Put(key, std::to_string(seq));
          if (!r.ok()) break;  // the store is gone
          std::lock_guard<std::mutex> lock(acked.mu);
          acked.revisions[key] = r->header().revision();
          acked.max_revision = std::max(acked.max_revision, r->header().revision());
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    store.Kill9();
    stop = true;
    for (auto& t : writers) t.join();
    watcher.join();
    ASSERT_FALSE(watch_failed) << watch_error << " in round " << round;
    previous_revision = revision;
  }
  // The writes really overlapped the kills: many were acknowledged over the run.
  EXPECT_GT(total_acked, static_cast<size_t>(kRounds * 10));
  // And a final restart still has all, and a watcher from the start sees every revision.
  ASSERT_TRUE(store.Start().ok());
  std::atomic<bool> failed{false};
  std::atomic<int64_t> progress{0};
  std::string why;
  EtcdClient client(store.address());
  auto head = client.Get("x");
  ASSERT_TRUE(head.ok());
  std::thread final_watch(
      [&] { WatchUntilBroken(store.address(), 2, &failed, &why, &progress); });
  for (int i = 0; i < 3000 && !failed && progress < head->header().revision(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  store.Kill9();
  final_watch.join();
  EXPECT_FALSE(failed) << why;
  EXPECT_EQ(progress.load(), head->header().revision()) << "the watch from 2 saw every revision";
  std::cout << "acknowledged writes checked: " << total_acked << ", final revision "
            << head->header().revision() << "\n";
}

}  // namespace
}  // namespace mkube::testing
