// The real mkube-store against clients that take more than their share: descriptors run out,
// connections past --max-connections, clients that ask and never read.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "proto/etcd/rpc.pb.h"
#include "tests/bench/bench_util.h"
#include "tests/util/etcd_client.h"
#include "tests/util/eventually.h"
#include "tests/util/process.h"
#include "tests/util/raw_h2.h"
#include "tests/util/store_process.h"

namespace mkube::testing {
namespace {

using mkube::bench::CpuSeconds;
using mkube::bench::PeakRssMib;
using mkube::bench::RssMib;

// Everything the peer sends until it closes (or `timeout` passes).
std::string ReadUntilClosed(int fd, std::chrono::milliseconds timeout) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[512];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, n);
  }
  return got;
}

// Sends `bytes` without blocking until they are all sent, the peer stops taking them for a
// second, or `limit` passes; the number sent.
size_t SendUntilHeld(int fd, const std::string& bytes, std::chrono::seconds limit) {
  size_t sent = 0;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (sent < bytes.size() && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 1000) <= 0) break;
    const ssize_t n =
        send(fd, bytes.data() + sent, bytes.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  return sent;
}

// Whether the peer has ended the connection (without reading what it sent).
bool Ended(int fd) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
         info.tcpi_state != TCP_ESTABLISHED;
}

size_t CountLines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) n += absl::StrContains(line, needle);
  return n;
}

class StoreLimitsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int fd : clients_) close(fd);
  }
  TempDir dir_;
  std::vector<int> clients_;
};

// Out of file descriptors, the store stops accepting for a while instead of spinning, says so
// once, and serves again as soon as descriptors are free.
TEST_F(StoreLimitsTest, AcceptBacksOffWhenDescriptorsRunOut) {
  StoreProcess store(dir_.Sub("data"), dir_.Sub("store.log"));
  store.set_wrapper({"/usr/bin/prlimit", "--nofile=96:96"});
  ASSERT_TRUE(store.Start().ok()) << ReadFile(dir_.Sub("store.log"));
  for (int i = 0; i < 150; ++i) {
    const int fd = h2::ConnectTcp(store.address());
    ASSERT_GE(fd, 0) << i;
    clients_.push_back(fd);
  }
  ASSERT_TRUE(Eventually([&] {
    return absl::StrContains(ReadFile(dir_.Sub("store.log")), "Too many open files");
  })) << ReadFile(dir_.Sub("store.log"));
  // Two seconds of a full descriptor table: a spinning accept loop would use them all.
  const double before = CpuSeconds(store.pid());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double used = CpuSeconds(store.pid()) - before;
  EXPECT_LT(used, 0.3) << "CPU seconds in 2 s";
  const std::string log = ReadFile(dir_.Sub("store.log"));
  EXPECT_LE(CountLines(log, "accept:"), 2u) << log;
  EXPECT_TRUE(absl::StrContains(log, "new connections wait")) << log;

  for (int fd : clients_) close(fd);
  clients_.clear();
  EtcdClient client(store.address());
  EXPECT_TRUE(Eventually([&] { return client.Put("k", "v").ok(); }, std::chrono::seconds(10)));
  auto got = client.Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->kvs_size(), 1);
  EXPECT_EQ(got->kvs(0).value(), "v");
}

// With --max-connections open, the next connection is told why in a GOAWAY and closed;
// closing one lets a client in again.
TEST_F(StoreLimitsTest, ConnectionsPastTheLimitAreRefusedWithGoaway) {
  StoreProcess store(dir_.Sub("data"), dir_.Sub("store.log"), {"--max-connections", "3"});
  ASSERT_TRUE(store.Start().ok());
  for (int i = 0; i < 3; ++i) {
    clients_.push_back(h2::ConnectTcp(store.address()));
    ASSERT_GE(clients_.back(), 0);
  }
  const int extra = h2::ConnectTcp(store.address());
  ASSERT_GE(extra, 0);
  const std::string got = ReadUntilClosed(extra, std::chrono::seconds(10));
  close(extra);
  // SETTINGS (9 bytes, empty), then GOAWAY: last stream 0, ENHANCE_YOUR_CALM, the reason.
  ASSERT_GE(got.size(), 9u + 9u + 8u) << got.size();
  EXPECT_EQ(got[3], 4) << "SETTINGS first";
  EXPECT_EQ(got[9 + 3], 7) << "then GOAWAY";
  EXPECT_EQ(static_cast<uint8_t>(got[9 + 9 + 7]), 11) << "ENHANCE_YOUR_CALM";
  EXPECT_EQ(got.substr(9 + 9 + 8), "too many open connections");
  // Logged after the refusal is sent.
  EXPECT_TRUE(Eventually(
      [&] { return absl::StrContains(ReadFile(dir_.Sub("store.log")), "--max-connections"); }));

  close(clients_.back());
  clients_.pop_back();
  EtcdClient client(store.address());
  EXPECT_TRUE(Eventually([&] { return client.Put("k", "v").ok(); }, std::chrono::seconds(10)));
}

// A client that sends a PING flood and reads nothing is no longer read once 1 MiB of acks
// wait for it, or is cut; the store does not take in the flood.
TEST_F(StoreLimitsTest, APingFloodIsNotReadWhileItsAcksWait) {
  StoreProcess store(dir_.Sub("data"), dir_.Sub("store.log"));
  ASSERT_TRUE(store.Start().ok());
  const int flood = h2::ConnectTcp(store.address());
  ASSERT_GE(flood, 0);
  clients_.push_back(flood);
  std::string pings = h2::Preface();
  while (pings.size() < (96u << 20)) pings += h2::Frame(h2::kPing, 0, 0, "12345678");
  EXPECT_LT(SendUntilHeld(flood, pings, std::chrono::seconds(10)), size_t{64} << 20)
      << "the store read a PING flood it did not answer";
  EtcdClient client(store.address());
  EXPECT_TRUE(client.Put("still", "served").ok());
}

// A client that grants no window (SETTINGS_INITIAL_WINDOW_SIZE 0: no DATA may be sent to it)
// and asks for a 1 MiB value 300 times at once, under the default --max-concurrent-streams
// (1,000): the answers it cannot take hold a bounded share of the store's memory (its calls
// past that wait to begin), another client is served meanwhile, and the memory goes back to
// the system once the client is gone.
TEST_F(StoreLimitsTest, AnswersAClientCannotTakeHoldBoundedMemoryUntilItGoes) {
#ifdef MKUBE_ASAN
  GTEST_SKIP() << "AddressSanitizer's allocator keeps what is freed: RSS says nothing here";
#endif
  StoreProcess store(dir_.Sub("data"), dir_.Sub("store.log"));
  ASSERT_TRUE(store.Start().ok());
  EtcdClient client(store.address());
  const std::string big(1 << 20, 'b');
  ASSERT_TRUE(client.Put("big", big).ok());
  auto got = client.Get("big");  // the store's own caches are warm before the measure
  ASSERT_TRUE(got.ok()) << got.status();
  const int64_t rss_before = RssMib(store.pid());
  const int64_t peak_before = PeakRssMib(store.pid());

  const int stuck = h2::ConnectTcp(store.address());
  ASSERT_GE(stuck, 0);
  clients_.push_back(stuck);
  etcdserverpb::RangeRequest range;
  range.set_key("big");
  std::string message = std::string(5, '\0') + range.SerializeAsString();
  message[4] = static_cast<char>(message.size() - 5);
  std::string calls = h2::Preface(std::string("\x00\x04\x00\x00\x00\x00", 6));
  for (uint32_t i = 0; i < 300; ++i) {
    calls += h2::CallHeaders(2 * i + 1, "/etcdserverpb.KV/Range") +
             h2::DataFrames(2 * i + 1, message, true);
  }
  ASSERT_EQ(SendUntilHeld(stuck, calls, std::chrono::seconds(10)), calls.size());
  // Answers are made (some tens of MiB), then no more while none can be sent.
  EXPECT_TRUE(Eventually([&] { return RssMib(store.pid()) - rss_before > 16; }))
      << RssMib(store.pid()) - rss_before;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto other = client.Get("big");
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_EQ(other->kvs_size(), 1);
  EXPECT_EQ(other->kvs(0).value(), big);
  EXPECT_TRUE(client.Put("still", "served").ok());
  EXPECT_FALSE(Ended(stuck));
  const int64_t peak = PeakRssMib(store.pid()) - peak_before;
  EXPECT_LT(peak, 64) << "MiB more at the peak";

  close(stuck);
  clients_.pop_back();
  EXPECT_TRUE(Eventually([&] { return RssMib(store.pid()) - rss_before < 16; }))
      << "MiB still held after the client left: " << RssMib(store.pid()) - rss_before
      << " (peak " << peak << ")";
  std::printf("RSS %lld MiB before, %+lld MiB at the peak, %+lld MiB after the client left\n",
              static_cast<long long>(rss_before), static_cast<long long>(peak),
              static_cast<long long>(RssMib(store.pid()) - rss_before));
}

}  // namespace
}  // namespace mkube::testing
