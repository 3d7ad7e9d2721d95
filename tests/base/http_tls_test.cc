// The HTTP server over TLS on real loopback sockets: requests and answers larger than a TLS
// record and than the socket's buffers, a streamed answer of many small pieces, a WebSocket,
// and a client that never finishes its handshake.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

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
#include <cstdio>
#include <filesystem>
#include <thread>

#include "absl/synchronization/notification.h"
#include "base/http/server.h"

namespace mkube::http {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

// A self-signed serving certificate in a temporary folder.
class Pki {
 public:
  Pki() {
    char tmpl[] = "/tmp/mkube-tls-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* x = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509_sign(x, key, EVP_sha256());
    FILE* f = fopen(cert().c_str(), "w");
    PEM_write_X509(f, x);
    fclose(f);
    f = fopen(key_file().c_str(), "w");
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(key);
  }
  ~Pki() { std::filesystem::remove_all(dir_); }
  std::string cert() const { return dir_ + "/tls.crt"; }
  std::string key_file() const { return dir_ + "/tls.key"; }

 private:
  std::string dir_;
};

class TlsTest : public ::testing::Test {
 protected:
  void Start(Handler h, ServerOptions o = {}) {
    o.listen = "127.0.0.1:0";
    o.tls_cert_file = pki_.cert();
    o.tls_key_file = pki_.key_file();
    server_ = std::make_unique<Server>(o, std::move(h));
    ASSERT_TRUE(server_->Start().ok());
  }
  // A client connection, handshaken.
  std::unique_ptr<ssl::stream<tcp::socket>> Connect() {
    auto s = std::make_unique<ssl::stream<tcp::socket>>(ioc_, client_tls_);
    s->next_layer().connect({net::ip::make_address("127.0.0.1"),
                             static_cast<uint16_t>(server_->port())});
    s->handshake(ssl::stream_base::client);
    return s;
  }

  Pki pki_;
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
  Start([](Request, ExchangePtr ex) {
    ex->Start(200, "application/json");
    std::thread([ex] {
      for (int i = 0; i < kLines; ++i) ex->WriteWaiting("{\"n\":" + std::to_string(i) + "}\n");
      ex->End();
    }).detach();
  });
  auto s = Connect();
  bhttp::request<bhttp::empty_body> get{bhttp::verb::get, "/watch", 11};
  get.set(bhttp::field::host, "h");
  bhttp::write(*s, get);
  boost::beast::flat_buffer buf;
  bhttp::response<bhttp::string_body> res;
  bhttp::read(*s, buf, res);
  std::string want;
  for (int i = 0; i < kLines; ++i) want += "{\"n\":" + std::to_string(i) + "}\n";
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
  ws.next_layer().next_layer().connect({net::ip::make_address("127.0.0.1"),
                                        static_cast<uint16_t>(server_->port())});
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
