#include "agent/pods/port_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "fmt/format.h"

namespace mkube::agent::pods {
namespace {

constexpr size_t kBuffer = 64 * 1024;

bool Address(const std::string& ip, int port, sockaddr_in* out) {
  std::memset(out, 0, sizeof *out);
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<uint16_t>(port));
  return inet_pton(AF_INET, ip.c_str(), &out->sin_addr) == 1;
}

}  // namespace

// What an epoll event points at: a listener, or one side of a connection.
struct PortProxy::Listener {
  std::string id;
  int fd = -1;
  std::string target_ip;
  int target_port = 0;
  bool closed = false;
  std::set<Conn*> conns;
};

struct PortProxy::Conn {
  Listener* listener = nullptr;
  int client = -1, server = -1;
  bool connected = false;
  bool client_eof = false, server_eof = false;
  bool client_shut = false, server_shut = false;
  bool client_unwatched = false, server_unwatched = false;  // out of the epoll set
  bool dead = false;
  std::string to_server, to_client;
};

namespace {

// epoll's data: 0 for the wake-up, else a pointer (8-aligned) with its kind in the low bits.
constexpr uint64_t kClientSide = 1, kListenerTag = 2, kTagBits = 7;

}  // namespace

PortProxy::PortProxy() {
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // the wake-up
  epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
  thread_ = std::thread([this] { Loop(); });
}

PortProxy::~PortProxy() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, l] : listeners_) l->closed = true;
  }
  uint64_t one = 1;
  (void)!write(wake_, &one, sizeof one);
  thread_.join();
  close(wake_);
  close(epoll_);
}

absl::Status PortProxy::Open(const std::string& id, const std::string& ip, int port,
                             const std::string& target_ip, int target_port) {
  sockaddr_in addr;
  if (!Address(ip, port, &addr)) {
    return absl::InvalidArgumentError(fmt::format("hostPort {}:{}: not an IPv4 address", ip, port));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 128) != 0) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(
        fmt::format("cannot listen on hostPort {}:{}: {}", ip, port, std::strerror(err)));
  }
  auto l = std::make_unique<Listener>();
  l->id = id;
  l->fd = fd;
  l->target_ip = target_ip;
  l->target_port = target_port;
  absl::MutexLock lock(&mu_);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = reinterpret_cast<uint64_t>(l.get()) | kListenerTag;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  if (auto old = listeners_.find(id); old != listeners_.end()) Retire(std::move(old->second));
  listeners_[id] = std::move(l);
  return absl::OkStatus();
}

void PortProxy::Close(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = listeners_.find(id);
  if (it == listeners_.end()) return;
  Retire(std::move(it->second));  // wakes the loop for its connections
  listeners_.erase(it);
}

void PortProxy::Retire(std::unique_ptr<Listener> l) {
  // The port is free as soon as this returns; its connections go in the loop's next round.
  l->closed = true;
  epoll_ctl(epoll_, EPOLL_CTL_DEL, l->fd, nullptr);
  close(l->fd);
  l->fd = -1;
  closing_.push_back(std::move(l));
  uint64_t one = 1;
  (void)!write(wake_, &one, sizeof one);
}

void PortProxy::Watch(Conn* c) {
  // A side that is done both ways hangs up for ever (EPOLLHUP cannot be masked): out of the
  // set it goes, while the other side drains.
  auto unwatch = [&](int fd, bool& unwatched) {
    if (!unwatched) epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    unwatched = true;
  };
  uint32_t client = 0, server = 0;
  if (!c->client_eof && c->to_server.size() < kBuffer) client |= EPOLLIN;
  if (!c->to_client.empty()) client |= EPOLLOUT;
  if (c->connected && !c->server_eof && c->to_client.size() < kBuffer) server |= EPOLLIN;
  if (!c->connected || !c->to_server.empty()) server |= EPOLLOUT;
  epoll_event ev{};
  if (c->client_eof && c->client_shut) {
    unwatch(c->client, c->client_unwatched);
  } else {
    ev.events = client;
    ev.data.u64 = reinterpret_cast<uint64_t>(c) | kClientSide;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, c->client, &ev);
  }
  if (c->server_eof && c->server_shut) {
    unwatch(c->server, c->server_unwatched);
  } else {
    ev.events = server;
    ev.data.u64 = reinterpret_cast<uint64_t>(c);
    epoll_ctl(epoll_, EPOLL_CTL_MOD, c->server, &ev);
  }
}

void PortProxy::Accept(Listener* l) {
  for (;;) {
    const int client = accept4(l->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) return;  // EAGAIN: all taken; other errors: try at the next event
    sockaddr_in target;
    Address(l->target_ip, l->target_port, &target);
    const int server = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (server < 0 || (connect(server, reinterpret_cast<sockaddr*>(&target), sizeof target) != 0 &&
                       errno != EINPROGRESS)) {
      close(client);
      if (server >= 0) close(server);
      continue;
    }
    auto* c = new Conn;
    c->listener = l;
    c->client = client;
    c->server = server;
    l->conns.insert(c);
    epoll_event ev{};
    ev.data.u64 = reinterpret_cast<uint64_t>(c) | kClientSide;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, client, &ev);
    ev.data.u64 = reinterpret_cast<uint64_t>(c);
    epoll_ctl(epoll_, EPOLL_CTL_ADD, server, &ev);
    Watch(c);
  }
}

void PortProxy::Pump(Conn* c, bool from_client) {
  const int fd = from_client ? c->client : c->server;
  std::string& out = from_client ? c->to_server : c->to_client;
  char buf[16 * 1024];
  while (out.size() < kBuffer) {
    const ssize_t n = read(fd, buf, std::min(sizeof buf, kBuffer - out.size()));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      (from_client ? c->client_eof : c->server_eof) = true;
    } else if (errno != EAGAIN && errno != EINTR) {
      c->dead = true;
    }
    return;
  }
}

void PortProxy::Flush(Conn* c, bool to_client) {
  const int fd = to_client ? c->client : c->server;
  std::string& out = to_client ? c->to_client : c->to_server;
  while (!out.empty()) {
    const ssize_t n = send(fd, out.data(), out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) c->dead = true;
    return;
  }
}

void PortProxy::Drop(Conn* c) {
  // Out of the set first: a forked child holding a copy of an fd would keep it in.
  if (!c->client_unwatched) epoll_ctl(epoll_, EPOLL_CTL_DEL, c->client, nullptr);
  if (!c->server_unwatched) epoll_ctl(epoll_, EPOLL_CTL_DEL, c->server, nullptr);
  close(c->client);
  close(c->server);
  c->listener->conns.erase(c);
  delete c;
}

void PortProxy::Loop() {
  std::vector<epoll_event> events(64);
  for (;;) {
    const int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), -1);
    absl::MutexLock lock(&mu_);
    std::set<Conn*> done;
    for (int i = 0; i < n; ++i) {
      const epoll_event& e = events[i];
      if (e.data.u64 == 0) {
        uint64_t v;
        (void)!read(wake_, &v, sizeof v);
        continue;
      }
      if (e.data.u64 & kListenerTag) {
        auto* l = reinterpret_cast<Listener*>(e.data.u64 & ~kTagBits);
        if (!l->closed) Accept(l);
        continue;
      }
      auto* c = reinterpret_cast<Conn*>(e.data.u64 & ~kTagBits);
      const bool client_side = e.data.u64 & kClientSide;
      if (c->dead || c->listener->closed || done.contains(c)) continue;
      if (!client_side && !c->connected && (e.events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->server, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) c->dead = true;
        c->connected = !c->dead;
      }
      if (!c->dead && (e.events & (EPOLLIN | EPOLLHUP | EPOLLERR))) Pump(c, client_side);
      // What was read goes out at once; a side that can take more gets what waits for it.
      if (!c->dead && (client_side ? c->connected : true)) Flush(c, !client_side);
      if (!c->dead && (e.events & EPOLLOUT) && (client_side || c->connected)) {
        Flush(c, client_side);
      }
      // An end passes on once what came before it has.
      if (!c->dead && c->client_eof && c->to_server.empty() && !c->server_shut && c->connected) {
        shutdown(c->server, SHUT_WR);
        c->server_shut = true;
      }
      if (!c->dead && c->server_eof && c->to_client.empty() && !c->client_shut) {
        shutdown(c->client, SHUT_WR);
        c->client_shut = true;
      }
      if (c->dead || (c->client_shut && c->server_shut)) {
        done.insert(c);
      } else {
        Watch(c);
      }
    }
    for (Conn* c : done) Drop(c);
    for (auto& l : closing_) {
      for (Conn* c : std::set<Conn*>(l->conns)) Drop(c);
    }
    closing_.clear();
    if (stopping_) {
      for (auto& [id, l] : listeners_) {
        for (Conn* c : std::set<Conn*>(l->conns)) Drop(c);
        close(l->fd);
      }
      listeners_.clear();
      return;
    }
  }
}

}  // namespace mkube::agent::pods
