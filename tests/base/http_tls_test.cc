// The HTTP server over TLS on real loopback sockets: requests and answers larger than a TLS
// record and than the socket's buffers, a streamed answer of many small pieces, a WebSocket,
// and a client that never finishes its handshake.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <chrono>
#include <thread>

#include "absl/synchronization/notification.h"
#include "base/http/server.h"
#include "tests/base/http_test_util.h"

namespace mkube::http {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

class TlsTest : public ::testing::Test {
 protected:
  void Start(Handler h, ServerOptions o = {}) {
    o.listen = "127.0.0.1:0";
    ASSERT_TRUE(pki_.ok());
    o.tls_cert_file = pki_->server_cert;
    o.tls_key_file = pki_->server_key;
    server_ = std::make_unique<Server>(o, std::move(h));
    ASSERT_TRUE(server_->Start().ok());
  }
  // A client connection, handshaken.
  std::unique_ptr<ssl::stream<tcp::socket>> Connect() {
    auto s = std::make_unique<ssl::stream<tcp::socket>>(ioc_, client_tls_);
    s->next_layer().connect(
        {net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(server_->port())});
    s->handshake(ssl::stream_base::client);
    return s;
  }

  TempPki pki_;
  net::io_context ioc_;
  ssl::context client_tls_{ssl::context::tls_client};
  std::unique_ptr<Server> server_;
};

// Bodies of many records each way on one kept-alive connection; the 8 MiB answer waits for a
// client that reads it late, so the server's writes wait for the socket.
TEST_F(TlsTest, LargeBodiesBothWaysOnOneConnection) {
  Start([](Request req, ExchangePtr ex) {
    if (req.path == "/echo") return ex->Finish({.content_type = "text/plain", .body = req.body});
    ex->Finish({.content_type = "text/plain", .body = std::string(8 << 20, 'z')});
  });
  auto s = Connect();
  std::string body(1 << 20, 'a');
  for (size_t i = 0; i < body.size(); i += 7) body[i] = static_cast<char>('a' + i % 26);
  bhttp::request<bhttp::string_body> post{bhttp::verb::post, "/echo", 11};
  post.set(bhttp::field::host, "h");
  post.body() = body;
  post.prepare_payload();
  bhttp::write(*s, post);
  boost::beast::flat_buffer buf;
  bhttp::response<bhttp::string_body> res;
  bhttp::read(*s, buf, res);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_TRUE(res.body() == body);

  bhttp::request<bhttp::empty_body> get{bhttp::verb::get, "/big", 11};
  get.set(bhttp::field::host, "h");
  bhttp::write(*s, get);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server's socket fills
  bhttp::response<bhttp::string_body> big;
  bhttp::read(*s, buf, big);
  EXPECT_EQ(big.body().size(), size_t{8} << 20);
  EXPECT_EQ(big.body().find_first_not_of('z'), std::string::npos);
}

TEST_F(TlsTest, StreamsManySmallPiecesInOrder) {
  constexpr int kLines = 20000;
  Start([](Request, ExchangePtr ex) { StreamNumberedLines(ex, kLines); });
  auto s = Connect();
  bhttp::request<bhttp::empty_body> get{bhttp::verb::get, "/watch", 11};
  get.set(bhttp::field::host, "h");
  bhttp::write(*s, get);
  boost::beast::flat_buffer buf;
  bhttp::response<bhttp::string_body> res;
  bhttp::read(*s, buf, res);
  const std::string want = NumberedLines(kLines);
  EXPECT_TRUE(res.body() == want) << res.body().size() << " bytes of " << want.size();
}

TEST_F(TlsTest, AWebSocketEchoesAndCloses) {
  absl::Notification closed;
  Start([&](Request req, ExchangePtr ex) {
    ex->AcceptWebSocket("", [&](WebSocketPtr ws) {
      return WebSocketHandlers{.on_message =
                                   [ws](std::string m) {
                                     if (m == "bye") {
                                       ws->Close();
                                     } else {
                                       ws->Send("echo " + m);
                                     }
                                     return true;
                                   },
                               .on_close = [&] { closed.Notify(); }};
    });
  });
  namespace websocket = boost::beast::websocket;
  websocket::stream<ssl::stream<tcp::socket>> ws(ioc_, client_tls_);
  ws.next_layer().next_layer().connect(
      {net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(server_->port())});
  ws.next_layer().handshake(ssl::stream_base::client);
  ws.handshake("127.0.0.1", "/exec");
  ws.binary(true);
  boost::beast::flat_buffer buf;
  const std::string large(100 << 10, 'w');
  for (const std::string& m : {std::string("one"), large}) {
    ws.write(net::buffer(m));
    ws.read(buf);
    EXPECT_TRUE(boost::beast::buffers_to_string(buf.data()) == "echo " + m);
    buf.consume(buf.size());
  }
  ws.write(net::buffer(std::string("bye")));
  boost::beast::error_code ec;
  ws.read(buf, ec);
  EXPECT_EQ(ec, websocket::error::closed);
  EXPECT_TRUE(closed.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

// A client that connects and says nothing is cut after the read timeout, before any handshake.
TEST_F(TlsTest, AHandshakeThatNeverComesIsCut) {
  Start([](Request, ExchangePtr ex) { ex->Finish({}); },
        ServerOptions{.read_timeout = std::chrono::milliseconds(200)});
  tcp::socket raw(ioc_);
  raw.connect({net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(server_->port())});
  timeval tv{.tv_sec = 10, .tv_usec = 0};
  setsockopt(raw.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char byte;
  EXPECT_EQ(recv(raw.native_handle(), &byte, 1, 0), 0);  // the server closed it
}

}  // namespace
}  // namespace mkube::http
