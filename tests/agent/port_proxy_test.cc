// hostPort forwarding over real loopback sockets: bytes both ways, half-closes passed on, a
// port in use refused with its address, a closed port no longer listening.
#include "agent/pods/port_proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "tests/util/etcd_client.h"

namespace mkube::agent::pods {
namespace {

int Listen(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  listen(fd, 8);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

// An upstream that reads everything until the client half-closes, then answers with its
// length and what it read, reversed, and closes.
std::thread Upstream(int listener) {
  return std::thread([listener] {
    const int c = accept(listener, nullptr, nullptr);
    std::string got = ReadAll(c);
    std::string reply = std::to_string(got.size()) + ":" + std::string(got.rbegin(), got.rend());
    for (size_t off = 0; off < reply.size();) {
      const ssize_t n = write(c, reply.data() + off, reply.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(c);
  });
}

TEST(PortProxy, ForwardsBothWaysAndPassesOnHalfCloses) {
  int upstream_port = 0;
  const int upstream = Listen(&upstream_port);
  PortProxy proxy;
  const int host_port = testing::PickFreePort();
  ASSERT_TRUE(proxy.Open("pod/1", "127.0.0.1", host_port, "127.0.0.1", upstream_port).ok());
  std::thread server = Upstream(upstream);
  const int c = Connect(host_port);
  ASSERT_GE(c, 0);
  // More than the proxy buffers at once: a slow side holds the other back, nothing is lost.
  std::string big(300 * 1024, 'x');
  big[0] = 'a';
  std::thread writer([&] {
    for (size_t off = 0; off < big.size();) {
      const ssize_t n = write(c, big.data() + off, big.size() - off);
      EXPECT_GT(n, 0);
      if (n <= 0) break;  // and still half-close, so the reader below ends
      off += static_cast<size_t>(n);
    }
    shutdown(c, SHUT_WR);
  });
  const std::string reply = ReadAll(c);
  writer.join();
  server.join();
  ASSERT_EQ(reply.size(), std::to_string(big.size()).size() + 1 + big.size());
  EXPECT_EQ(reply.substr(0, 7), "307200:");
  EXPECT_EQ(reply.back(), 'a');
  close(c);
  close(upstream);
}

TEST(PortProxy, APortInUseIsRefusedAndAClosedOneStopsListening) {
  int upstream_port = 0;
  const int upstream = Listen(&upstream_port);
  PortProxy proxy;
  const int host_port = testing::PickFreePort();
  ASSERT_TRUE(proxy.Open("a", "127.0.0.1", host_port, "127.0.0.1", upstream_port).ok());
  const absl::Status again = proxy.Open("b", "127.0.0.1", host_port, "127.0.0.1", upstream_port);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find("127.0.0.1:" + std::to_string(host_port)), std::string::npos)
      << again;
  EXPECT_FALSE(proxy.Open("c", "not-an-ip", host_port, "127.0.0.1", upstream_port).ok());
  proxy.Close("a");
  bool refused = false;
  for (int i = 0; i < 200 && !refused; ++i) {
    const int c = Connect(host_port);
    refused = c < 0;
    if (c >= 0) close(c);
    if (!refused) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(refused);
  close(upstream);
}

TEST(PortProxy, AnUpstreamThatIsNotThereClosesTheClient) {
  PortProxy proxy;
  const int host_port = testing::PickFreePort();
  const int nobody = testing::PickFreePort();
  ASSERT_TRUE(proxy.Open("x", "127.0.0.1", host_port, "127.0.0.1", nobody).ok());
  const int c = Connect(host_port);
  ASSERT_GE(c, 0);
  EXPECT_EQ(ReadAll(c), "");  // closed, not hung
  close(c);
}

}  // namespace
}  // namespace mkube::agent::pods
