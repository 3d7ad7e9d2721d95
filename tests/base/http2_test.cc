// The HTTP server's HTTP/2 (chosen by ALPN), with libnghttp2's client session as the client:
// many requests at once on one connection, bodies of many frames each way, streamed answers,
// the limits, a client certificate, and a client that cancels its stream.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "base/http/server.h"
#include "tests/base/http_test_util.h"
#include "tests/util/h2_client.h"

namespace mkube::http {
namespace {

using testing::h2::Call;
using testing::h2::RunCalls;

class Http2Test : public ::testing::Test {
 protected:
  void Start(Handler h, ServerOptions o = {}) {
    ASSERT_TRUE(pki_.ok());
    o.tls_cert_file = pki_->server_cert;
    o.tls_key_file = pki_->server_key;
    o.client_ca_file = pki_->ca;
    server_ = std::make_unique<Server>(o, std::move(h));
    ASSERT_TRUE(server_->Start().ok());
  }
  testing::h2::Connection To() const { return {.port = server_->port()}; }

  TempPki pki_;
  std::unique_ptr<Server> server_;
};

std::string Answer(const Request& req) {
  std::string a = req.method + " " + req.path + "?" + req.query + " " + req.Header("host");
  if (!req.body.empty()) a += " " + std::to_string(req.body.size()) + " " + req.body.substr(0, 8);
  return a;
}

// Forty requests at once, half with bodies of many frames, answered in whatever order the
// handler's threads finish, a quarter with answers of 3 MiB: each gets its own answer, all
// over one connection, with its headers in lower case.
TEST_F(Http2Test, ManyRequestsAtOnceOnOneConnection) {
  absl::Mutex mu;
  std::set<std::string> peers;
  Start([&](Request req, ExchangePtr ex) {
    {
      absl::MutexLock l(&mu);
      peers.insert(req.peer);
    }
    std::thread([req = std::move(req), ex] {
      std::string answer = Answer(req);
      if (req.path == "/big") answer += std::string(3 << 20, 'b');
      ex->Finish({.content_type = "text/plain",
                  .headers = {{"X-Mixed-Case", "yes"}},
                  .body = std::move(answer)});
    }).detach();
  });
  std::vector<Call> calls(40);
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i].path = (i % 4 == 0 ? "/big" : "/item") + std::string("?i=") + std::to_string(i);
    if (i % 2) {
      calls[i].method = "POST";
      calls[i].body = "body" + std::to_string(i) + std::string(200 << 10, 'x');
    }
  }
  ASSERT_EQ(RunCalls(To(), calls), "");
  const std::string host = "127.0.0.1:" + std::to_string(server_->port());
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    EXPECT_EQ(c.status, 200) << i;
    std::string want = c.method + " " + c.path + " " + host;
    if (!c.body.empty()) want += " " + std::to_string(c.body.size()) + " " + c.body.substr(0, 8);
    EXPECT_EQ(c.got.substr(0, want.size()), want) << i;
    EXPECT_EQ(c.got.size(), want.size() + (i % 4 == 0 ? size_t{3} << 20 : 0)) << i;
    EXPECT_NE(std::find(c.headers.begin(), c.headers.end(),
                        std::pair<std::string, std::string>("x-mixed-case", "yes")),
              c.headers.end())
        << i;
  }
  EXPECT_EQ(peers.size(), 1u);
}

TEST_F(Http2Test, StreamsManySmallPiecesInOrderThenEnds) {
  constexpr int kLines = 20000;
  Start([](Request, ExchangePtr ex) { StreamNumberedLines(ex, kLines); });
  std::vector<Call> calls(3);
  for (auto& c : calls) c.path = "/watch";
  ASSERT_EQ(RunCalls(To(), calls), "");
  const std::string want = NumberedLines(kLines);
  for (const auto& c : calls) {
    EXPECT_EQ(c.status, 200);
    EXPECT_TRUE(c.got == want) << c.got.size() << " bytes of " << want.size();
  }
}

TEST_F(Http2Test, RefusesWhatIsOverTheLimitsWithoutTheHandler) {
  std::atomic<int> handled{0};
  ServerOptions o;
  o.max_body_bytes = 100 << 10;
  o.max_header_bytes = 4 << 10;
  Start(
      [&](Request, ExchangePtr ex) {
        ++handled;
        ex->Finish({});
      },
      o);
  std::vector<Call> calls(2);
  calls[0].method = "POST";
  calls[0].path = "/x";
  calls[0].body = std::string(300 << 10, 'a');
  calls[1].path = "/y?" + std::string(8 << 10, 'q');
  ASSERT_EQ(RunCalls(To(), calls), "");
  EXPECT_EQ(calls[0].status, 413);
  EXPECT_EQ(calls[1].status, 431);
  EXPECT_EQ(handled.load(), 0);
}

// The verified client certificate's subject reaches the handler, as over HTTP/1.1.
TEST_F(Http2Test, GivesTheClientCertificatesSubject) {
  Start([](Request req, ExchangePtr ex) {
    ex->Finish({.content_type = "text/plain", .body = req.client_cn});
  });
  std::vector<Call> calls(1);
  calls[0].path = "/whoami";
  auto to = To();
  to.client_cert = pki_->client_cert;
  to.client_key = pki_->client_key;
  ASSERT_EQ(RunCalls(to, calls), "");
  EXPECT_EQ(calls[0].got, "client");
}

// A client that resets its stream mid-answer: OnClose runs, and the writer is told the client
// is gone; the connection's other streams go on.
TEST_F(Http2Test, AStreamTheClientCancelsEndsItsWriter) {
  absl::Notification closed, writer_stopped;
  Start([&](Request req, ExchangePtr ex) {
    if (req.path == "/plain") return ex->Finish({.content_type = "text/plain", .body = "fine"});
    ex->Start(200, "application/json");
    ex->OnClose([&] { closed.Notify(); });
    std::thread([ex, &writer_stopped] {
      const std::string line(1024, 'l');
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (std::chrono::steady_clock::now() < deadline && ex->WriteWaiting(line)) {
      }
      writer_stopped.Notify();
    }).detach();
  });
  std::vector<Call> calls(2);
  calls[0].path = "/watch";
  calls[0].cancel_after = 100 << 10;
  calls[1].path = "/plain";
  ASSERT_EQ(RunCalls(To(), calls), "");
  EXPECT_EQ(calls[1].got, "fine");
  EXPECT_TRUE(closed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(writer_stopped.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

}  // namespace
}  // namespace mkube::http
