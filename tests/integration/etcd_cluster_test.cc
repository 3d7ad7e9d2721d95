// The apiserver on a 3-member etcd cluster (Debian's etcd, on loopback), given all three
// endpoints: one member is killed with -9 while pods are written, and afterwards every write
// the apiserver acknowledged is there, and a watch opened before saw each of them.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <set>
#include <thread>

#include "client/client.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"
#include "tests/util/apiserver_process.h"
#include "tests/util/etcd_client.h"
#include "tests/util/process.h"

namespace mkube::testing {
namespace {

class EtcdCluster {
 public:
  explicit EtcdCluster(const TempDir& dir) : dir_(dir) {
    for (int i = 0; i < 3; ++i) {
      client_.push_back(fmt::format("127.0.0.1:{}", PickFreePort()));
      peer_.push_back(fmt::format("http://127.0.0.1:{}", PickFreePort()));
    }
  }

  absl::Status Start() {
    std::string initial;
    for (int i = 0; i < 3; ++i) initial += fmt::format("{}m{}={}", i ? "," : "", i, peer_[i]);
    for (int i = 0; i < 3; ++i) {
      const std::string url = "http://" + client_[i];
      members_.push_back(std::make_unique<Subprocess>(
          std::vector<std::string>{EtcdPath(), "--name", fmt::format("m{}", i), "--data-dir",
                                   dir_.Sub(fmt::format("m{}", i)), "--listen-client-urls", url,
                                   "--advertise-client-urls", url, "--listen-peer-urls", peer_[i],
                                   "--initial-advertise-peer-urls", peer_[i], "--initial-cluster",
                                   initial, "--initial-cluster-state", "new", "--log-level",
                                   "warn", "--logger", "zap"},
          dir_.Sub(fmt::format("m{}.log", i))));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (int i = 0; i < 3; ++i) {
      while (!EtcdClient(client_[i]).Ready()) {
        if (std::chrono::steady_clock::now() > deadline) {
          return absl::UnavailableError(ReadFile(dir_.Sub(fmt::format("m{}.log", i))));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    return absl::OkStatus();
  }

  std::string endpoints() const { return fmt::format("{},{},{}", client_[0], client_[1], client_[2]); }
  void Kill9(int i) { members_[i]->Kill(); }

 private:
  const TempDir& dir_;
  std::vector<std::string> client_, peer_;
  std::vector<std::unique_ptr<Subprocess>> members_;
};

api::Pod NewPod(const std::string& name) {
  api::Pod p;
  p.mutable_metadata()->set_name(name);
  auto* c = p.mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image("busybox");
  return p;
}

TEST(EtcdCluster, AMemberKilledUnderWritesLosesNoAcknowledgedWriteAndNoWatchEvent) {
  TempDir dir;
  EtcdCluster etcd(dir);
  ASSERT_TRUE(etcd.Start().ok());
  ApiServerProcess api(dir.path(), etcd.endpoints());
  ASSERT_TRUE(api.Start().ok());
  client::ClientOptions o;
  o.address = api.address();
  o.token = "admin-token";
  client::GrpcClient admin(o);

  // A watch of every pod from now on, read on a thread of its own.
  apiserver::ListRequest list;
  list.set_resource("pods");
  list.set_namespace_("default");
  auto listed = admin.List(list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  apiserver::WatchRequest wreq;
  wreq.set_resource("pods");
  wreq.set_namespace_("default");
  wreq.set_resource_version(listed->resource_version());
  // As an informer watches: when the stream ends (the apiserver may end any watch), again
  // from the last version seen, so that a version too old to resume from would fail the test.
  std::mutex mu;
  std::set<std::string> watched;
  std::vector<std::string> endings;
  std::atomic<bool> in_order{true}, stop{false};
  client::WatchStreamPtr stream;
  std::thread reader([&] {
    std::string from = listed->resource_version();
    int64_t last = 0;
    while (!stop) {
      wreq.set_resource_version(from);
      client::WatchStreamPtr s = admin.Watch(wreq);
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop) break;
        stream = std::move(s);
      }
      apiserver::WatchEvent ev;
      while (stream->Read(&ev)) {
        api::Pod p;
        p.ParseFromString(ev.object());
        if (!p.metadata().resource_version().empty()) from = p.metadata().resource_version();
        if (ev.type() != "ADDED") continue;
        const int64_t rv = std::stoll(p.metadata().resource_version());
        if (rv <= last) in_order = false;
        last = rv;
        std::lock_guard<std::mutex> lock(mu);
        watched.insert(p.metadata().name());
      }
      const absl::Status why = stream->Finish();
      std::lock_guard<std::mutex> lock(mu);
      if (!stop) endings.push_back(why.ToString());
    }
  });

  // Writes, one after another; the first member (where the apiserver's connection goes
  // first) is killed a third of the way. A write that fails may or may not have happened:
  // only the acknowledged ones are checked.
  constexpr int kWrites = 300;
  std::vector<std::string> acknowledged;
  int failed = 0;
  for (int i = 0; i < kWrites; ++i) {
    if (i == kWrites / 3) etcd.Kill9(0);
    const std::string name = fmt::format("p-{:03d}", i);
    if (admin.Create("pods", "default", NewPod(name)).ok()) {
      acknowledged.push_back(name);
    } else {
      ++failed;
    }
  }
  std::cout << acknowledged.size() << " writes acknowledged, " << failed
            << " failed around the member's loss\n";
  EXPECT_GE(acknowledged.size(), static_cast<size_t>(kWrites - 20))
      << failed << " writes failed: the apiserver did not move to another member";

  // Every acknowledged write is stored (read through the apiserver from the live members)…
  auto after = admin.List(list);
  ASSERT_TRUE(after.ok()) << after.status();
  std::set<std::string> stored;
  for (const auto& bytes : after->items()) {
    api::Pod p;
    p.ParseFromString(bytes);
    stored.insert(p.metadata().name());
  }
  for (const auto& name : acknowledged) EXPECT_TRUE(stored.contains(name)) << name << " was lost";
  // …and the watch saw each of them, in order.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    size_t missing = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& name : acknowledged) missing += watched.contains(name) ? 0 : 1;
    }
    if (missing == 0) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << missing << " acknowledged pods never reached the watch";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(in_order);
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    for (const auto& e : endings) std::cout << "the watch ended (and was resumed): " << e << "\n";
    if (stream) stream->Cancel();
  }
  reader.join();
}

}  // namespace
}  // namespace mkube::testing
