// Watch guarantees under load: several writers and many watchers at once; every watcher sees
// every revision of its range exactly once, in order, each revision in one response; and a
// watcher whose client stops reading delays neither the writers nor the other watchers; a
// request that cannot be read ends its stream.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <thread>

#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "store/mvcc/key_range.h"
#include "tests/util/etcd_client.h"
#include "tests/util/store_process.h"

namespace mkube::testing {
namespace {

using mkube::store::mvcc::KeyRange;

constexpr int kWriters = 4;
constexpr int kOpsPerWriter = 400;
constexpr int kStreams = 24;

struct Range {
  std::string key, end;
};
const std::vector<Range> kRanges = {
    {std::string(1, '\0'), std::string(1, '\0')}, {"a/", "a0"}, {"b/", "b0"}, {"a/1", ""},
    {"d/", "d0"}};

struct Received {
  std::vector<mvccpb::Event> events;
  std::map<int64_t, int> response_of_revision;  // revision -> response number
  bool split_revision = false;
};

// Reads one stream until a progress response at or above `head` says everything is in.
class StreamReader {
 public:
  StreamReader(const std::string& address, std::vector<Range> ranges)
      : client_(address), stream_(client_), ranges_(std::move(ranges)) {
    for (size_t i = 0; i < ranges_.size(); ++i) {
      etcdserverpb::WatchCreateRequest c;
      c.set_key(ranges_[i].key);
      c.set_range_end(ranges_[i].end);
      c.set_start_revision(2);
      c.set_watch_id(static_cast<int64_t>(i) + 1);
      stream_.Create(c);
    }
  }

  // Returns false if the stream ended early.
  bool ReadAll(const std::atomic<int64_t>& head) {
    etcdserverpb::WatchResponse resp;
    int responses = 0;
    bool asked = false;
    while (stream_.Read(&resp)) {
      ++responses;
      if (resp.watch_id() == -1) {
        asked = false;
        if (head > 0 && resp.header().revision() >= head) return true;
      }
      if (resp.canceled()) return false;
      Received& r = received_[resp.watch_id()];
      for (const auto& ev : resp.events()) {
        auto [it, fresh] = r.response_of_revision.emplace(ev.kv().mod_revision(), responses);
        if (!fresh && it->second != responses) r.split_revision = true;
        r.events.push_back(ev);
      }
      if (head > 0 && !asked) {
        etcdserverpb::WatchRequest progress;
        progress.mutable_progress_request();
        stream_.Send(progress);
        asked = true;
      }
    }
    return false;
  }

  // Asks for progress even if no event comes any more.
  void Nudge() {
    etcdserverpb::WatchRequest progress;
    progress.mutable_progress_request();
    stream_.Send(progress);
  }

  const std::vector<Range>& ranges() const { return ranges_; }
  std::map<int64_t, Received>& received() { return received_; }

 private:
  EtcdClient client_;
  WatchStream stream_;
  std::vector<Range> ranges_;
  std::map<int64_t, Received> received_;
};

TEST(StoreWatchTest, EveryWatcherSeesEveryRevisionOnceInOrder) {
  TempDir dir;
  StoreProcess store(dir.Sub("data"), dir.Sub("store.log"));
  ASSERT_TRUE(store.Start().ok());

  std::vector<std::unique_ptr<StreamReader>> fast;
  for (int s = 0; s < kStreams; ++s) {
    std::vector<Range> ranges;
    for (size_t i = 0; i < kRanges.size(); ++i) ranges.push_back(kRanges[(s + i) % kRanges.size()]);
    fast.push_back(std::make_unique<StreamReader>(store.address(), ranges));
  }
  // The slow client: five watchers of everything, not read until everyone else is done.
  auto slow = std::make_unique<StreamReader>(
      store.address(), std::vector<Range>(5, kRanges[0]));

  std::atomic<int64_t> head{0};
  std::atomic<int> fast_done{0};
  std::atomic<bool> fast_ok{true};
  std::vector<std::thread> readers;
  for (auto& r : fast) {
    readers.emplace_back([&, reader = r.get()] {
      if (!reader->ReadAll(head)) fast_ok = false;
      ++fast_done;
    });
  }

  const std::string value(1024, 'v');
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      EtcdClient client(store.address());
      for (int i = 0; i < kOpsPerWriter; ++i) {
        switch (i % 3) {
          case 0:
            ASSERT_TRUE(client.Put("a/" + std::to_string(i % 17), value).ok());
            break;
          case 1: {  // three keys in one revision
            etcdserverpb::TxnRequest t;
            for (auto p : {"a/", "b/", "d/"}) {
              auto* put = t.add_success()->mutable_request_put();
              put->set_key(p + std::to_string(w) + "-" + std::to_string(i));
              put->set_value(value);
            }
            ASSERT_TRUE(client.Txn(t).ok());
            break;
          }
          default:
            ASSERT_TRUE(client.Delete("d/" + std::to_string(w) + "-" + std::to_string(i - 1)).ok());
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  EtcdClient client(store.address());
  head = client.Get("x")->header().revision();
  ASSERT_EQ(head.load(), 1 + kWriters * kOpsPerWriter) << "every op took one revision";
  for (auto& r : fast) r->Nudge();
  for (auto& t : readers) t.join();
  EXPECT_TRUE(fast_ok);
  EXPECT_EQ(fast_done.load(), kStreams);

  // Only now does the slow client read: it must still get everything.
  slow->Nudge();
  ASSERT_TRUE(slow->ReadAll(head));

  // The reference: one event list over all keys, revisions 2..head without a gap.
  const auto& all = fast[0]->received()[1].events;
  ASSERT_EQ(fast[0]->ranges()[0].key, kRanges[0].key);
  int64_t expect_rev = 2;
  for (const auto& ev : all) {
    if (ev.kv().mod_revision() != expect_rev) {
      ASSERT_EQ(ev.kv().mod_revision(), expect_rev - 1) << "gap or disorder in the reference";
    } else {
      ++expect_rev;
    }
  }
  EXPECT_EQ(expect_rev - 1, head.load());

  auto check = [&](StreamReader& reader, const char* who) {
    for (size_t i = 0; i < reader.ranges().size(); ++i) {
      KeyRange range(reader.ranges()[i].key, reader.ranges()[i].end);
      std::vector<std::string> want, got;
      for (const auto& ev : all) {
        if (range.Contains(ev.kv().key())) want.push_back(ev.ShortDebugString());
      }
      Received& r = reader.received()[static_cast<int64_t>(i) + 1];
      for (const auto& ev : r.events) got.push_back(ev.ShortDebugString());
      ASSERT_EQ(got.size(), want.size()) << who << " watcher " << i;
      EXPECT_TRUE(got == want) << who << " watcher " << i << " saw another sequence";
      EXPECT_FALSE(r.split_revision) << who << " watcher " << i << " got a revision in pieces";
    }
  };
  for (auto& r : fast) check(*r, "fast");
  check(*slow, "slow");
}

// A request that is not a WatchRequest ends its stream with INVALID_ARGUMENT (the service
// reads requests as bytes and decodes them itself).
TEST(StoreWatchTest, AnUnreadableRequestEndsTheStream) {
  TempDir dir;
  StoreProcess store(dir.Sub("data"), dir.Sub("store.log"));
  ASSERT_TRUE(store.Start().ok());
  grpc::GenericStub stub(grpc::CreateChannel(store.address(), grpc::InsecureChannelCredentials()));
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto call = stub.PrepareCall(&ctx, "/etcdserverpb.Watch/Watch", &cq);
  auto step = [&](auto op) {
    op();
    void* tag;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    return ok;
  };
  ASSERT_TRUE(step([&] { call->StartCall(reinterpret_cast<void*>(1)); }));
  grpc::Slice garbage(std::string("\xff\xff\xff\xff"));
  grpc::ByteBuffer request(&garbage, 1);
  step([&] { call->Write(request, reinterpret_cast<void*>(2)); });
  grpc::ByteBuffer response;
  EXPECT_FALSE(step([&] { call->Read(&response, reinterpret_cast<void*>(3)); }));
  grpc::Status status;
  step([&] { call->Finish(&status, reinterpret_cast<void*>(4)); });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_EQ(status.error_message(), "cannot decode the watch request");
  // The store still serves watches.
  EtcdClient client(store.address());
  WatchStream watch(client);
  etcdserverpb::WatchCreateRequest c;
  c.set_key("k");
  watch.Create(c);
  etcdserverpb::WatchResponse created;
  ASSERT_TRUE(watch.Read(&created));
  EXPECT_TRUE(created.created());
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
}

}  // namespace
}  // namespace mkube::testing
