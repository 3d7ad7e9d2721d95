#include "store/rpc/loop.h"

#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"

// gperftools' tcmalloc, when the binary links it.
extern "C" void MallocExtension_ReleaseFreeMemory() __attribute__((weak));

namespace mkube::store::rpc {

namespace {

void ReleaseFreeMemory() {
  if (MallocExtension_ReleaseFreeMemory) {
    MallocExtension_ReleaseFreeMemory();
  } else {
    malloc_trim(0);
  }
}

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("rpc");
  return logger;
}

}  // namespace

Loop::~Loop() {
  if (epfd_ >= 0) ::close(epfd_);
  if (efd_ >= 0) ::close(efd_);
}

absl::Status Loop::Init() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || efd_ < 0) return absl::InternalError(std::string("epoll: ") + strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &efd_;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, efd_, &ev);
  return absl::OkStatus();
}

void Loop::Start(int listen_fd, std::vector<std::unique_ptr<Loop>>* all) {
  all_ = all;
  if (listen_fd >= 0) {
    listen_fd_ = listen_fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &listen_fd_;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  }
  thread_ = std::thread([this] { Run(); });
}

void Loop::Post(Outgoing o) {
  {
    absl::MutexLock lock(&mu_);
    inbox_.push_back(std::move(o));
  }
  // The loop drains its inbox after every round of events: its own posts need no wake-up
  // (those made after the round's Drain, by calls begun in Flush, make the next wait short).
  if (std::this_thread::get_id() == thread_id_.load(std::memory_order_relaxed)) {
    own_posts_ = true;
    return;
  }
  if (!notified_.exchange(true, std::memory_order_acq_rel)) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(efd_, &one, sizeof(one));
  }
}

void Loop::DispatchUnary(const Server::Method* method, std::string_view request,
                         Responder responder) {
  if (++round_calls_ == 1) {
    deferred_.emplace(Deferred{method, std::string(request), std::move(responder)});
    return;
  }
  if (deferred_) RunDeferred(false);  // calls start in the order they came
  method->unary(request, std::move(responder));
}

void Loop::RunDeferred(bool quiet) {
  Deferred d = std::move(*deferred_);
  deferred_.reset();
  d.responder.quiet_ = quiet;
  d.method->unary(d.request, std::move(d.responder));
}

void Loop::MarkDirty(Connection* c) {
  if (c->dirty) return;
  c->dirty = true;
  dirty_.push_back(c);
}

void Loop::Retire(std::shared_ptr<Connection> c) {
  if (conns_.erase(c.get())) Closed();
  graveyard_.push_back(std::move(c));
}

void Loop::Accept() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EINTR || error == ECONNABORTED) continue;
      if (error == EAGAIN || error == EWOULDBLOCK) return;
      if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
        PauseAccept(error);
        return;
      }
      if (size_t held; accept_log_.Due(&held)) {
        Log().warn("accept: {} ({} more since the last message)", strerror(error), held);
      }
      return;
    }
    accept_delay_ = std::chrono::milliseconds(0);
    if (connections_->fetch_add(1, std::memory_order_relaxed) >= max_connections_) {
      Refuse(fd);
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Loop* target = (*all_)[next_loop_++ % all_->size()].get();
    if (target == this) {
      Adopt(fd);
    } else {
      target->Post(Outgoing::Control(Outgoing::kAdopt, fd));
    }
  }
}

void Loop::PauseAccept(int error) {
  using std::chrono::milliseconds;
  accept_delay_ = accept_delay_.count() == 0 ? milliseconds(5)
                                             : std::min(accept_delay_ * 2, milliseconds(1000));
  accept_paused_ = true;
  accept_resume_ = std::chrono::steady_clock::now() + accept_delay_;
  epoll_ctl(epfd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  if (size_t held; accept_log_.Due(&held)) {
    Log().warn(
        "accept: {}; new connections wait {} ms ({} open; {} more such errors since the last "
        "message)",
        strerror(error), accept_delay_.count(), connections_->load(std::memory_order_relaxed),
        held);
  }
}

void Loop::ResumeAcceptIfDue() {
  if (!accept_paused_ || std::chrono::steady_clock::now() < accept_resume_) return;
  accept_paused_ = false;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &listen_fd_;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, listen_fd_, &ev);
}

int Loop::WaitTimeout() const {
  if (own_posts_ || deferred_) return 0;  // work for this round already
  if (!accept_paused_ && deadlines_.empty()) return -1;
  auto next = std::chrono::steady_clock::time_point::max();
  if (accept_paused_) next = accept_resume_;
  if (!deadlines_.empty()) next = std::min(next, deadlines_.top().when);
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(next - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60 * 60 * 1000));
}

void Loop::AddDeadline(std::chrono::steady_clock::time_point when, Connection* c, uint32_t id) {
  // A call usually ends long before its deadline, leaving its entry stale: when the heap has
  // doubled since it was last swept, only the entries of open calls are kept, so that a client
  // sending many calls with long timeouts grows it no further than twice its open calls.
  if (deadlines_.size() >= sweep_at_) {
    std::vector<Deadline> live;
    for (; !deadlines_.empty(); deadlines_.pop()) {
      const Deadline& d = deadlines_.top();
      if (auto conn = d.conn.lock(); conn && !conn->closed() && conn->HasStream(d.stream)) {
        live.push_back(d);
      }
    }
    for (auto& d : live) deadlines_.push(std::move(d));
    sweep_at_ = std::max<size_t>(1024, 2 * deadlines_.size());
  }
  deadlines_.push(Deadline{when, c->weak_from_this(), id});
}

void Loop::ExpireDeadlines() {
  const auto now = std::chrono::steady_clock::now();
  while (!deadlines_.empty() && deadlines_.top().when <= now) {
    std::shared_ptr<Connection> conn = deadlines_.top().conn.lock();
    const uint32_t id = deadlines_.top().stream;
    deadlines_.pop();
    if (conn && !conn->closed()) conn->Expire(id);
  }
}

void Loop::Refuse(int fd) {
  if (!tls_) {  // a TLS client cannot read frames before a handshake: it is only closed
    const std::string out = RefusalFrames("too many open connections");
    [[maybe_unused]] ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
  Closed();
  if (size_t held; accept_log_.Due(&held)) {
    Log().warn(
        "refused a connection: {} connections are open, the most --max-connections "
        "allows ({} more refused since the last message)",
        max_connections_, held);
  }
}

void Loop::TlsFailed(const absl::Status& why) {
  if (size_t held; tls_log_.Due(&held)) {
    Log().warn("closed a connection: {} ({} more since the last message)",
               std::string(why.message()), held);
  }
}

void Loop::Adopt(int fd) {
  if (going_away_) {
    ::close(fd);
    Closed();
    return;
  }
  auto conn = std::make_shared<Connection>(this, fd, tls_.get());
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = conn.get();
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    Log().warn("epoll_ctl: {}", strerror(errno));
    Closed();
    return;
  }
  conns_.emplace(conn.get(), conn);
  conn->Open();
}

void Loop::Drain() {
  own_posts_ = false;
  std::vector<Outgoing> batch;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (inbox_.empty()) return;
      batch.swap(inbox_);
    }
    for (auto& o : batch) {
      switch (o.kind) {
        case Outgoing::kAdopt:
          Adopt(o.fd);
          break;
        case Outgoing::kGoaway:
          going_away_ = true;
          for (auto& [p, c] : conns_) c->GoAway();
          break;
        case Outgoing::kStop:
          stop_ = true;
          break;
        default:
          if (!o.conn->closed()) o.conn->Deliver(o);
          break;
      }
    }
    batch.clear();
  }
}

void Loop::Flush() {
  for (size_t i = 0; i < dirty_.size(); ++i) {  // Flush may add connections
    Connection* c = dirty_[i];
    c->dirty = false;
    c->Flush();
  }
  dirty_.clear();
}

void Loop::Run() {
  thread_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  std::vector<epoll_event> events(256);
  while (!stop_) {
    graveyard_.clear();
    if (release_memory_) {
      release_memory_ = false;
      ReleaseFreeMemory();
    }
    const int n = epoll_wait(epfd_, events.data(), static_cast<int>(events.size()), WaitTimeout());
    if (n < 0 && errno != EINTR) {
      Log().error("epoll_wait: {}", strerror(errno));
      break;
    }
    ResumeAcceptIfDue();
    ExpireDeadlines();
    for (int i = 0; i < n; ++i) {
      void* p = events[i].data.ptr;
      if (p == &efd_) {
        uint64_t count;
        [[maybe_unused]] ssize_t r = ::read(efd_, &count, sizeof(count));
        notified_.store(false, std::memory_order_release);
      } else if (p == &listen_fd_) {
        Accept();
      } else {
        auto* c = static_cast<Connection*>(p);
        if (c->closed()) continue;
        const uint32_t ev = events[i].events;
        if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) c->OnReadable();
        if ((ev & EPOLLOUT) && !c->closed()) c->OnWritable();
      }
    }
    if (deferred_) {
      bool idle;
      {
        absl::MutexLock lock(&mu_);
        idle = inbox_.empty();
      }
      RunDeferred(round_calls_ == 1 && idle);
    }
    round_calls_ = 0;
    Drain();
    Flush();
  }
  // Stopping: every call still open learns its connection is gone.
  std::vector<std::shared_ptr<Connection>> all;
  for (auto& [p, c] : conns_) all.push_back(c);
  for (auto& c : all) c->Close();
  graveyard_.clear();
  // Destroyed outside the lock: the last reference to a connection closes its socket and
  // destroys its handlers.
  std::vector<Outgoing> left;
  {
    absl::MutexLock lock(&mu_);
    left.swap(inbox_);
  }
}

}  // namespace mkube::store::rpc
