// The real mkube-store against clients that take more than their share: descriptors run out,
// connections past --max-connections.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "tests/bench/bench_util.h"
#include "tests/util/etcd_client.h"
#include "tests/util/eventually.h"
#include "tests/util/process.h"
#include "tests/util/store_process.h"

namespace mkube::testing {
namespace {

using mkube::bench::CpuSeconds;

// A TCP connection to `address` (HOST:PORT) that says nothing; -1 if connect failed.
int Connect(const std::string& address) {
  const auto colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

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
    const int fd = Connect(store.address());
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
  for (int i = 0; i < 3; ++i) clients_.push_back(Connect(store.address()));
  const int extra = Connect(store.address());
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

}  // namespace
}  // namespace mkube::testing
