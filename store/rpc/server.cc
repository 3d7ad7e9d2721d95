#include "store/rpc/server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/status.h"
#include "fmt/format.h"
#include "store/rpc/loop.h"

namespace mkube::store::rpc {

// Responder and ServerStream: posts to the connection's loop.

Responder::~Responder() {
  if (conn_) Fail(absl::InternalError("the call was dropped without an answer"));
}

void Responder::Reply(const google::protobuf::MessageLite& response) {
  if (!conn_) return;
  Outgoing o{Outgoing::kReply, std::move(conn_), stream_, FrameMessage(response), {}};
  o.conn->AnswerPosted(o.data.size());
  Loop* loop = o.conn->loop();
  loop->Post(std::move(o));
}

void Responder::Fail(const absl::Status& status) {
  if (!conn_) return;
  Outgoing o{Outgoing::kFinish, std::move(conn_), stream_, {}, status};
  o.conn->AnswerPosted(0);
  Loop* loop = o.conn->loop();
  loop->Post(std::move(o));
}

void ServerStream::Write(std::string framed) {
  queued_.fetch_add(framed.size(), std::memory_order_acq_rel);
  conn_->loop()->Post(Outgoing{Outgoing::kMessage, conn_, stream_, std::move(framed), {}});
}

void ServerStream::Finish(const absl::Status& status) {
  conn_->loop()->Post(Outgoing{Outgoing::kFinish, conn_, stream_, {}, status});
}

// Server

Server::Server(ServerOptions options) : options_(std::move(options)) {}

Server::~Server() { Shutdown(std::chrono::milliseconds(0)); }

void Server::AddUnary(std::string path, UnaryHandler handler) {
  methods_[std::move(path)] = Method{std::move(handler), nullptr};
}

void Server::AddStream(std::string path, StreamFactory factory) {
  methods_[std::move(path)] = Method{nullptr, std::move(factory)};
}

std::string_view HostOf(std::string_view listen) {
  const size_t colon = listen.rfind(':');
  std::string_view host = colon == std::string_view::npos ? listen : listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

namespace {

absl::StatusOr<int> Listen(const std::string& listen, std::string* bound) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(fmt::format("--listen {}: want HOST:PORT", listen));
  }
  const std::string host(HostOf(listen));
  const std::string port = listen.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
      rc != 0) {
    return absl::InvalidArgumentError(
        fmt::format("--listen {}: {}", listen, gai_strerror(rc)));
  }
  std::string last_error = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 4096) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
      const int p = ss.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      *bound = fmt::format("{}:{}", listen.substr(0, colon), p);
      freeaddrinfo(res);
      return fd;
    }
    last_error = strerror(errno);
    ::close(fd);
  }
  freeaddrinfo(res);
  return absl::UnavailableError(fmt::format("cannot listen on {}: {}", listen, last_error));
}

}  // namespace

absl::Status Server::Start() {
  MKUBE_ASSIGN_OR_RETURN(auto fd, Listen(options_.listen, &address_));
  listen_fd_ = fd;
  const int n = std::max(1, options_.loops);
  for (int i = 0; i < n; ++i) {
    auto loop =
        std::make_unique<Loop>(&methods_, options_, &in_flight_, &connections_, &partial_bytes_);
    MKUBE_RETURN_IF_ERROR(loop->Init());
    loops_.push_back(std::move(loop));
  }
  for (int i = 0; i < n; ++i) loops_[i]->Start(i == 0 ? listen_fd_ : -1, &loops_);
  started_ = true;
  return absl::OkStatus();
}

void Server::Shutdown(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  if (started_) {
    for (auto& l : loops_) l->Post(Outgoing::Control(Outgoing::kGoaway));
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (in_flight_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (auto& l : loops_) l->Post(Outgoing::Control(Outgoing::kStop));
    for (auto& l : loops_) l->Join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

}  // namespace mkube::store::rpc
