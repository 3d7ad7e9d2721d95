#include "agent/pods/prober.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "tests/util/process.h"

namespace mkube::agent::pods {
namespace {

using ::testing::HasSubstr;

// A loopback listener on a free port that answers each connection with `reply`.
class Listener {
 public:
  explicit Listener(std::string reply) : reply_(std::move(reply)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    listen(fd_, 8);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        char buf[1024];
        (void)!read(c, buf, sizeof buf);
        (void)!write(c, reply_.data(), reply_.size());
        close(c);
      }
    });
  }
  ~Listener() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  int port() const { return port_; }

 private:
  std::string reply_;
  int fd_ = -1, port_ = 0;
  std::thread thread_;
};

api::Probe Tcp(int port) {
  api::Probe p;
  p.mutable_tcp_socket()->mutable_port()->set_int_value(port);
  return p;
}

api::Probe Http(int port, const std::string& path) {
  api::Probe p;
  p.mutable_http_get()->mutable_port()->set_int_value(port);
  p.mutable_http_get()->set_path(path);
  return p;
}

api::Probe Exec(const std::vector<std::string>& command, int timeout_seconds = 0) {
  api::Probe p;
  for (const auto& c : command) p.mutable_exec()->add_command(c);
  p.set_timeout_seconds(timeout_seconds);
  return p;
}

ProbeTarget Target() {
  ProbeTarget t;
  t.pod_ip = "127.0.0.1";
  t.exec.env = {"PATH=/usr/bin:/bin"};
  t.exec.dir = "/";
  return t;
}

TEST(RunProbe, Exec) {
  EXPECT_TRUE(RunProbe(Exec({"true"}), Target()).ok());
  auto failed = RunProbe(Exec({"sh", "-c", "exit 3"}), Target());
  EXPECT_EQ(failed.message(), "command exited with 3");
  auto slow = RunProbe(Exec({"sleep", "5"}, 1), Target());
  EXPECT_EQ(slow.message(), "command timed out");
  EXPECT_FALSE(RunProbe(Exec({"no-such-program"}), Target()).ok());
}

TEST(RunProbe, TcpSocket) {
  Listener open("");
  EXPECT_TRUE(RunProbe(Tcp(open.port()), Target()).ok());
  auto closed = RunProbe(Tcp(9), Target());
  EXPECT_THAT(std::string(closed.message()), HasSubstr("dial tcp 127.0.0.1:9: connect: Connection refused"));
}

TEST(RunProbe, HttpGetByStatusAndNamedPort) {
  Listener ok("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  Listener moved("HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n");
  Listener broken("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
  EXPECT_TRUE(RunProbe(Http(ok.port(), "/healthz"), Target()).ok());
  EXPECT_TRUE(RunProbe(Http(moved.port(), "/"), Target()).ok());
  EXPECT_EQ(RunProbe(Http(broken.port(), "/"), Target()).message(),
            "HTTP probe failed with statuscode: 500");
  api::Container c;
  auto* port = c.add_ports();
  port->set_name("http");
  port->set_container_port(ok.port());
  ProbeTarget t = Target();
  t.container = &c;
  api::Probe named;
  named.mutable_http_get()->mutable_port()->set_string_value("http");
  EXPECT_TRUE(RunProbe(named, t).ok());
  named.mutable_http_get()->mutable_port()->set_string_value("nope");
  EXPECT_EQ(RunProbe(named, t).message(), "unknown port \"nope\"");
}

TEST(TimingOf, KubernetesDefaults) {
  ProbeTiming t = TimingOf(api::Probe());
  EXPECT_EQ(t.initial_delay, absl::ZeroDuration());
  EXPECT_EQ(t.period, absl::Seconds(10));
  EXPECT_EQ(t.timeout, absl::Seconds(1));
  EXPECT_EQ(t.success_threshold, 1);
  EXPECT_EQ(t.failure_threshold, 3);
}

}  // namespace
}  // namespace mkube::agent::pods
