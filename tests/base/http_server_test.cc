// The HTTP server over real loopback sockets: keep-alive, chunked streaming, limits, bad
// input, a client that goes away.
#include "base/http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/synchronization/notification.h"
#include "base/http/health.h"
#include "base/metrics.h"

namespace mkube::http {
namespace {

// A raw client: sends bytes, reads until a pattern or the end.
class Client {
 public:
  explicit Client(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    timeval tv{.tv_sec = 10, .tv_usec = 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Client() { Close(); }
  bool connected() const { return connected_; }
  void Send(const std::string& s) { ASSERT_EQ(write(fd_, s.data(), s.size()), static_cast<ssize_t>(s.size())); }
  // Reads until `until` has been seen (or the connection ends); returns all read so far.
  std::string ReadUntil(const std::string& until) {
    char buf[4096];
    while (got_.find(until) == std::string::npos) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      got_.append(buf, n);
    }
    return got_;
  }
  // True once the server closed the connection.
  bool ReadsEnd() {
    char buf[4096];
    for (;;) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n == 0) return true;
      if (n < 0) return false;
      got_.append(buf, n);
    }
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string got_;
};

class ServerTest : public ::testing::Test {
 protected:
  void Start(Handler h, ServerOptions o = {}) {
    server_ = std::make_unique<Server>(o, std::move(h));
    ASSERT_TRUE(server_->Start().ok());
  }
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, KeepAliveServesRequestsInTurnOnOneConnection) {
  Start([](Request req, ExchangePtr ex) {
    ex->Finish({.content_type = "text/plain", .body = req.method + " " + req.path + "?" + req.query +
                                                       " " + std::string(req.Header("x-a")) + " " + req.body});
  });
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  c.Send("GET /one?x=1 HTTP/1.1\r\nHost: h\r\nX-A: b\r\n\r\n");
  EXPECT_NE(c.ReadUntil("GET /one?x=1 b ").find("HTTP/1.1 200 OK"), std::string::npos);
  c.Send("POST /two HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody");
  EXPECT_NE(c.ReadUntil("POST /two?  body").find("POST /two?  body"), std::string::npos);
}

TEST_F(ServerTest, StreamsChunksUntilTheEnd) {
  Start([](Request, ExchangePtr ex) {
    ex->Start(200, "application/json");
    std::thread([ex] {
      ex->Write("{\"n\":1}\n");
      ex->Write("{\"n\":2}\n");
      ex->End();
    }).detach();
  });
  Client c(server_->port());
  c.Send("GET /watch HTTP/1.1\r\nHost: h\r\n\r\n");
  std::string got = c.ReadUntil("0\r\n\r\n");
  EXPECT_NE(got.find("Transfer-Encoding: chunked"), std::string::npos);
  // Whether the two went out in one chunk or two depends on when the round came.
  const bool one = got.find("10\r\n{\"n\":1}\n{\"n\":2}\n\r\n0\r\n\r\n") != std::string::npos;
  const bool two = got.find("8\r\n{\"n\":1}\n\r\n8\r\n{\"n\":2}\n\r\n0\r\n\r\n") != std::string::npos;
  EXPECT_TRUE(one || two) << got;
  EXPECT_TRUE(c.ReadsEnd());
}

TEST_F(ServerTest, PiecesWrittenInARowGoOutAsOneChunkSharedByEveryStream) {
  auto shared = std::make_shared<const std::string>("{\"shared\":true}\n");
  Start([shared](Request, ExchangePtr ex) {
    // Written on the connection's own thread: nothing is flushed before the handler returns.
    ex->Start(200, "application/json");
    EXPECT_TRUE(ex->Write(shared));
    EXPECT_TRUE(ex->Write(std::string("{\"own\":1}\n")));
    EXPECT_TRUE(ex->Write(shared));
    ex->End();
  });
  for (int i = 0; i < 2; ++i) {
    Client c(server_->port());
    c.Send("GET /watch HTTP/1.1\r\nHost: h\r\n\r\n");
    std::string got = c.ReadUntil("0\r\n\r\n");
    EXPECT_NE(got.find("2a\r\n{\"shared\":true}\n{\"own\":1}\n{\"shared\":true}\n\r\n0\r\n\r\n"),
              std::string::npos)
        << got;
    EXPECT_TRUE(c.ReadsEnd());
  }
  EXPECT_EQ(*shared, "{\"shared\":true}\n");
}

TEST_F(ServerTest, AClientThatGoesAwayEndsItsStream) {
  absl::Notification closed;
  std::shared_ptr<Exchange> held;
  absl::Notification started;
  Start([&](Request, ExchangePtr ex) {
    ex->Start(200, "application/json");
    ex->OnClose([&] { closed.Notify(); });
    held = ex;
    started.Notify();
  });
  {
    Client c(server_->port());
    c.Send("GET /watch HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
    c.ReadUntil("\r\n\r\n");
  }
  EXPECT_TRUE(closed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  // Writes after the close are refused, not queued.
  for (int i = 0; i < 100 && held->Write("x"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(held->Write("x"));
  held.reset();
}

// Clients that go away while chunks pour in: the write in flight and the close race on the
// connection's strand, and neither may touch what the other freed (ASan watches this one).
TEST_F(ServerTest, StreamsCutMidWriteLoseNothingTwice) {
  std::atomic<int> ended{0};
  Start([&](Request, ExchangePtr ex) {
    ex->Start(200, "application/json");
    std::thread([ex, &ended] {
      const std::string line(512, 'x');
      while (ex->Write(line)) std::this_thread::yield();
      ended.fetch_add(1);
    }).detach();
  });
  constexpr int kClients = 60;
  for (int i = 0; i < kClients; ++i) {
    Client c(server_->port());
    ASSERT_TRUE(c.connected());
    c.Send("GET /watch HTTP/1.1\r\nHost: h\r\n\r\n");
    c.ReadUntil(i % 2 ? "xxxx" : "\r\n\r\n");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ended.load() < kClients && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(ended.load(), kClients);
  // Every connection is let go of, with what it had queued.
  while (server_->connections() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(server_->connections(), 0u);
}

// A client that stops reading: what waits for its socket counts against the backlog, and
// past it the stream is refused rather than queued without end.
TEST_F(ServerTest, AClientThatStopsReadingHasItsStreamCut) {
  absl::Notification cut;
  std::atomic<size_t> written{0};
  Start(
      [&](Request, ExchangePtr ex) {
        ex->Start(200, "application/json");
        std::thread([ex, &cut, &written] {
          const std::string line(4096, 'x');
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (std::chrono::steady_clock::now() < deadline) {
            if (!ex->Write(line)) return cut.Notify();
            written.fetch_add(line.size());
            // Slower than the I/O thread, so what waits is what the socket has not taken.
            std::this_thread::sleep_for(std::chrono::microseconds(50));
          }
        }).detach();
      },
      ServerOptions{.max_stream_backlog = 256 << 10});
  Client c(server_->port());
  c.Send("GET /watch HTTP/1.1\r\nHost: h\r\n\r\n");
  c.ReadUntil("\r\n\r\n");
  ASSERT_TRUE(cut.WaitForNotificationWithTimeout(absl::Seconds(25)));
  // The kernel's socket buffers take some; the server holds at most its backlog beyond them.
  EXPECT_LT(written.load(), size_t{64} << 20);
}

// A WebSocket upgrade, accepted by the handler with the subprotocol it chose: messages go
// both ways in order, the server's close reaches the client, and on_close runs once.
TEST_F(ServerTest, AcceptsAWebSocketAndEchoesItsMessages) {
  absl::Notification closed;
  std::atomic<int> closes{0};
  Start([&](Request req, ExchangePtr ex) {
    ASSERT_TRUE(req.websocket);
    ASSERT_EQ(req.Subprotocols(), (std::vector<std::string>{"v5.channel.k8s.io", "v4.channel.k8s.io"}));
    ex->AcceptWebSocket("v5.channel.k8s.io", [&](WebSocketPtr ws) {
      return WebSocketHandlers{
          .on_message =
              [ws](std::string m) {
                if (m == "bye") {
                  ws->Close();
                } else {
                  std::thread([ws, m] { ws->Send("echo " + m); }).detach();
                }
                return true;
              },
          .on_close =
              [&] {
                closes.fetch_add(1);
                closed.Notify();
              }};
    });
  });
  namespace net = boost::asio;
  namespace websocket = boost::beast::websocket;
  net::io_context ioc;
  websocket::stream<net::ip::tcp::socket> ws(ioc);
  ws.next_layer().connect({net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(server_->port())});
  ws.set_option(websocket::stream_base::decorator([](websocket::request_type& r) {
    r.set(boost::beast::http::field::sec_websocket_protocol, "v5.channel.k8s.io, v4.channel.k8s.io");
  }));
  websocket::response_type res;
  ws.handshake(res, "127.0.0.1", "/exec");
  EXPECT_EQ(res[boost::beast::http::field::sec_websocket_protocol], "v5.channel.k8s.io");
  ws.binary(true);
  boost::beast::flat_buffer buf;
  for (const std::string m : {"one", "two"}) {
    ws.write(net::buffer(m));
    ws.read(buf);
    EXPECT_EQ(boost::beast::buffers_to_string(buf.data()), "echo " + m);
    buf.consume(buf.size());
  }
  ws.write(net::buffer(std::string("bye")));
  boost::beast::error_code ec;
  ws.read(buf, ec);
  EXPECT_EQ(ec, websocket::error::closed);
  EXPECT_TRUE(closed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(closes.load(), 1);
}

TEST_F(ServerTest, RefusesOversizedAndMalformedRequests) {
  std::atomic<int> handled{0};
  ServerOptions o;
  o.max_body_bytes = 100;
  o.max_header_bytes = 1024;
  Start([&](Request, ExchangePtr ex) {
    ++handled;
    ex->Finish({});
  }, o);
  {
    Client c(server_->port());
    c.Send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n");
    EXPECT_NE(c.ReadUntil("\r\n\r\n").find("HTTP/1.1 413"), std::string::npos);
  }
  {
    Client c(server_->port());
    c.Send("GET /x HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n");
    EXPECT_NE(c.ReadUntil("\r\n\r\n").find("HTTP/1.1 431"), std::string::npos);
  }
  {
    Client c(server_->port());
    c.Send("NOT HTTP AT ALL\r\n\r\n");
    EXPECT_NE(c.ReadUntil("\r\n\r\n").find("HTTP/1.1 400"), std::string::npos);
  }
  EXPECT_EQ(handled.load(), 0);
}

TEST_F(ServerTest, ASlowRequestIsCutAfterTheReadTimeout) {
  ServerOptions o;
  o.read_timeout = std::chrono::milliseconds(200);
  Start([](Request, ExchangePtr ex) { ex->Finish({}); }, o);
  Client c(server_->port());
  c.Send("GET /x HTTP/1.1\r\nHost:");
  EXPECT_TRUE(c.ReadsEnd());
}

TEST(ServerStart, NamesWhatItCannotDo) {
  Server bad_addr({.listen = "nowhere"}, [](Request, ExchangePtr) {});
  EXPECT_NE(bad_addr.Start().message().find("nowhere"), std::string::npos);
  Server bad_cert({.listen = "127.0.0.1:0", .tls_cert_file = "/no/such.crt",
                   .tls_key_file = "/no/such.key"},
                  [](Request, ExchangePtr) {});
  EXPECT_NE(bad_cert.Start().message().find("/no/such.crt"), std::string::npos);
}

TEST(Query, DecodesPairs) {
  auto q = ParseQuery("labelSelector=abc%3Daaa&watch&x=a+b&fieldSelector=spec.nodeName%3Dn%2Cstatus.phase%21%3DFailed");
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[0].second, "abc=aaa");
  EXPECT_EQ(q[1].first, "watch");
  EXPECT_EQ(q[2].second, "a b");
  EXPECT_EQ(q[3].second, "spec.nodeName=n,status.phase!=Failed");
}

TEST(Health, ReadyzSaysWhichCheckFails) {
  metrics::Registry registry;
  registry.AddCounter("demo_total", "A demo.").With().Inc(2);
  bool ready = false;
  HealthChecks checks;
  checks.live.push_back({"ping", [] { return absl::OkStatus(); }});
  checks.ready.push_back({"informer-sync", [&] {
                            return ready ? absl::OkStatus() : absl::UnavailableError("not synced");
                          }});
  auto server = StartHealthServer("127.0.0.1:0", checks, &registry);
  ASSERT_TRUE(server.ok());
  auto get = [&](const std::string& path) {
    Client c((*server)->port());
    c.Send("GET " + path + " HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    c.ReadsEnd();
    return c.ReadUntil("\xff");
  };
  EXPECT_NE(get("/livez").find("200 OK"), std::string::npos);
  std::string readyz = get("/readyz");
  EXPECT_NE(readyz.find("HTTP/1.1 500"), std::string::npos);
  EXPECT_NE(readyz.find("[-]informer-sync failed: not synced"), std::string::npos);
  ready = true;
  EXPECT_NE(get("/readyz?verbose").find("[+]informer-sync ok"), std::string::npos);
  EXPECT_NE(get("/metrics").find("demo_total 2"), std::string::npos);
  EXPECT_NE(get("/nothing").find("404"), std::string::npos);
}

}  // namespace
}  // namespace mkube::http
