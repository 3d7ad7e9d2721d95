#include "agent/pods/prober.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "agent/runtime/process.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::pods {
namespace {

absl::StatusOr<int> PortOf(const api::IntOrString& port, const api::Container* c) {
  if (port.has_int_value()) return port.int_value();
  int n = 0;
  if (absl::SimpleAtoi(port.string_value(), &n)) return n;
  if (c) {
    for (const auto& p : c->ports()) {
      if (p.name() == port.string_value()) return p.container_port();
    }
  }
  return absl::InvalidArgumentError(fmt::format("unknown port \"{}\"", port.string_value()));
}

// A connected socket to ip:port within the deadline.
absl::StatusOr<int> Connect(const std::string& ip, int port, absl::Time deadline) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(fmt::format("invalid address {}", ip));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(std::strerror(errno));
  const std::string where = fmt::format("dial tcp {}:{}", ip, port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(fmt::format("{}: connect: {}", where, std::strerror(err)));
  }
  pollfd p{fd, POLLOUT, 0};
  const int ms = static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
  if (poll(&p, 1, ms) != 1) {
    close(fd);
    return absl::DeadlineExceededError(fmt::format("{}: i/o timeout", where));
  }
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    close(fd);
    return absl::UnavailableError(fmt::format("{}: connect: {}", where, std::strerror(err)));
  }
  return fd;
}

absl::Status Exec(const api::ExecAction& action, const ProbeTarget& t, absl::Time deadline) {
  if (action.command().empty()) return absl::InvalidArgumentError("exec probe without a command");
  std::vector<std::string> argv(action.command().begin(), action.command().end());
  const int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int null_out = open("/dev/null", O_WRONLY | O_CLOEXEC);
  auto spawned = runtime::SpawnInContainer(t.exec, argv, {null_in, null_out, null_out, false});
  close(null_in);
  close(null_out);
  if (!spawned.ok()) return spawned.status();
  const pid_t pid = *spawned;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (absl::Now() >= deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return absl::DeadlineExceededError("command timed out");
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  const runtime::ExitInfo exit = runtime::ExitFromWaitStatus(status);
  if (exit.exit_code != 0) {
    return absl::UnavailableError(fmt::format("command exited with {}", exit.exit_code));
  }
  return absl::OkStatus();
}

absl::Status HttpGet(const api::HTTPGetAction& action, const ProbeTarget& t, absl::Time deadline) {
  MKUBE_ASSIGN_OR_RETURN(auto port, PortOf(action.port(), t.container));
  const std::string host = action.host().empty() ? t.pod_ip : action.host();
  auto fd = Connect(host, port, deadline);
  if (!fd.ok())
    return absl::UnavailableError(fmt::format("Get \"http://{}:{}{}\": {}", host, port,
                                              action.path().empty() ? "/" : action.path(),
                                              std::string(fd.status().message())));
  const std::string path = action.path().empty() ? "/" : action.path();
  std::string request = fmt::format(
      "GET {} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: kube-probe/mkube\r\n", path, host, port);
  for (const auto& h : action.http_headers()) request += fmt::format("{}: {}\r\n", h.name(), h.value());
  request += "Connection: close\r\n\r\n";
  std::string reply;
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(*fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN) break;
    pollfd p{*fd, POLLOUT, 0};
    if (poll(&p, 1, 50) < 0 || absl::Now() >= deadline) break;
  }
  char buf[512];
  while (reply.find("\r\n") == std::string::npos && absl::Now() < deadline) {
    pollfd p{*fd, POLLIN, 0};
    const int ms = static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(deadline - absl::Now())));
    if (poll(&p, 1, ms) != 1) break;
    const ssize_t n = recv(*fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(*fd);
  // "HTTP/1.1 200 OK"
  int code = 0;
  const auto sp = reply.find(' ');
  if (sp == std::string::npos || !absl::SimpleAtoi(reply.substr(sp + 1, 3), &code)) {
    return absl::UnavailableError(
        fmt::format("Get \"http://{}:{}{}\": no response within the timeout", host, port, path));
  }
  if (code < 200 || code >= 400) {
    return absl::UnavailableError(fmt::format("HTTP probe failed with statuscode: {}", code));
  }
  return absl::OkStatus();
}

}  // namespace

ProbeTiming TimingOf(const api::Probe& p) {
  return {absl::Seconds(p.initial_delay_seconds()),
          absl::Seconds(p.period_seconds() > 0 ? p.period_seconds() : 10),
          absl::Seconds(p.timeout_seconds() > 0 ? p.timeout_seconds() : 1),
          p.success_threshold() > 0 ? p.success_threshold() : 1,
          p.failure_threshold() > 0 ? p.failure_threshold() : 3};
}

absl::Status RunProbe(const api::Probe& probe, const ProbeTarget& target) {
  const absl::Time deadline = absl::Now() + TimingOf(probe).timeout;
  if (probe.has_exec()) return Exec(probe.exec(), target, deadline);
  if (probe.has_http_get()) return HttpGet(probe.http_get(), target, deadline);
  if (probe.has_tcp_socket()) {
    MKUBE_ASSIGN_OR_RETURN(auto port, PortOf(probe.tcp_socket().port(), target.container));
    MKUBE_ASSIGN_OR_RETURN(
        auto fd,
        Connect(probe.tcp_socket().host().empty() ? target.pod_ip : probe.tcp_socket().host(), port,
                deadline));
    close(fd);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError("a probe needs exec, httpGet or tcpSocket");
}

}  // namespace mkube::agent::pods
