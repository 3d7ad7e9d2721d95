// libFuzzer target: the store's transport as a client sees it. Each input is what one client
// sends after the HTTP/2 preface (frames, header blocks, gRPC messages) to a real server on
// loopback with a unary and a streaming echo method; the client then ends its side and the
// server must close the connection. ASan/UBSan catch what the input breaks; a server that
// keeps a finished client's connection open aborts the run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "google/protobuf/wrappers.pb.h"
#include "store/rpc/server.h"
#include "tests/util/raw_h2.h"

namespace {

using mkube::store::rpc::Responder;
using mkube::store::rpc::Server;
using mkube::store::rpc::ServerOptions;
using mkube::store::rpc::ServerStream;
using mkube::store::rpc::StreamHandler;

class Echo final : public StreamHandler {
 public:
  explicit Echo(std::shared_ptr<ServerStream> stream) : stream_(std::move(stream)) {}
  void OnMessage(std::string_view message) override {
    google::protobuf::BytesValue v;
    v.set_value(std::string(message));
    stream_->Write(v);
  }
  void OnHalfClose() override { stream_->Finish(absl::OkStatus()); }

 private:
  std::shared_ptr<ServerStream> stream_;
};

Server* StartServer() {
  ServerOptions options;
  options.max_message_bytes = 1 << 16;  // small limits, so that inputs can reach them
  options.max_connection_partial_bytes = 1 << 17;
  options.max_concurrent_streams = 16;
  auto* server = new Server(options);
  server->AddUnary("/fuzz.Echo/Unary", [](std::string_view request, Responder responder) {
    google::protobuf::BytesValue v;
    v.set_value(std::string(request));
    responder.Reply(v);
  });
  server->AddStream("/fuzz.Echo/Stream", [](std::shared_ptr<ServerStream> stream) {
    return std::make_unique<Echo>(std::move(stream));
  });
  if (!server->Start().ok()) std::abort();
  return server;
}

int Connect(const std::string& address) {
  sockaddr_in sa = mkube::testing::h2::Ipv4Address(address);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // From a different loopback address each time (127.1.0.0/16): a server that closes first
  // leaves its side in TIME_WAIT, and thousands of runs a second would use up one address's
  // ports within a minute.
  static uint32_t next = 0;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_addr.s_addr = htonl((127u << 24) | (1u << 16) | (next++ & 0xffff));
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
    std::perror("bind");
    std::abort();
  }
  // libFuzzer's watchdog signals may interrupt connect, which then goes on by itself.
  while (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 && errno != EISCONN) {
    if (errno != EINTR && errno != EALREADY) {
      std::perror("connect");
      std::abort();
    }
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, 100);
  }
  // Closed with a reset: no TIME_WAIT left behind by thousands of runs a second.
  const linger hard{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Server* server = StartServer();
  const int fd = Connect(server->address());
  std::string in = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  in.append(reinterpret_cast<const char*>(data), size);
  // Send while reading what comes back (the server may stop reading a client that does not).
  size_t sent = 0;
  bool ended = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  char buf[1 << 16];
  for (;;) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "the server did not close a connection whose client had ended\n");
      std::abort();
    }
    if (sent == in.size() && !ended) {
      shutdown(fd, SHUT_WR);
      ended = true;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (ended ? 0 : POLLOUT)), 0};
    if (poll(&p, 1, 100) <= 0) continue;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;  // closed by the server
    }
    if (!ended && (p.revents & POLLOUT)) {
      const ssize_t n = send(fd, in.data() + sent, in.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) break;  // reset by the server
      sent += static_cast<size_t>(n);
    }
  }
  close(fd);
  return 0;
}
