#pragma once

#include <atomic>
#include <chrono>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/http/server.h"

// What a server's connections share (internal to base/http): the server's context, and the
// flow of bytes from handlers' threads to a connection's strand.
namespace mkube::http::detail {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;

const char* Reason(int status);

// One connection's outgoing side as other threads see it: what waits to be written, whether
// the client is gone, and a way onto its strand. A connection lives while an operation of
// its is pending (or a handler owes it an answer); others refer to it weakly, so none
// outlives its server.
class Flow {
 public:
  virtual ~Flow() = default;
  virtual void Post(std::function<void()> f) = 0;
  // In a round of the server's: sends what the connection has waiting, on its strand.
  virtual void PostFlush() {}
  // Called once the server's threads have stopped: the connection lets go of anything that
  // holds it, and writers waiting for the client give up.
  virtual void Detach() {
    gone.store(true);
    Drained();
  }
  // Waits until the backlog is at most `limit`; false once the client is gone.
  bool WaitBelow(size_t limit) {
    std::unique_lock<std::mutex> l(drain_mu_);
    drained_.wait(l, [&] { return gone.load() || backlog.load() <= limit; });
    return !gone.load();
  }
  // Wakes the writers waiting in WaitBelow.
  void Drained() {
    { std::lock_guard<std::mutex> l(drain_mu_); }
    drained_.notify_all();
  }
  // Counts `n` bytes as written (or dropped).
  void Written(size_t n) {
    if (n == 0) return;
    backlog.fetch_sub(n);
    Drained();
  }

  std::atomic<size_t> backlog{0};  // bytes queued and not yet written
  std::atomic<bool> gone{false};

 private:
  std::mutex drain_mu_;
  std::condition_variable drained_;
};

// What the connections of one server share.
struct Context {
  ServerOptions options;
  Handler handler;
  std::atomic<size_t> connections{0};
  std::optional<ssl::context> tls;
  net::io_context ioc;

  Context() : round_timer_(ioc) {}

  // `f` has something to flush: it goes in the next round (see ServerOptions::coalesce).
  void Due(std::shared_ptr<Flow> f) {
    std::lock_guard<std::mutex> l(round_mu_);
    due_.push_back(std::move(f));
    if (round_pending_) return;
    round_pending_ = true;
    NextWindow();
    if (window_flushes_ < ServerOptions::kQuickFlushes) {
      net::post(ioc, [this] { Round(); });
    } else {
      round_timer_.expires_at(window_start_ + options.coalesce);
      round_timer_.async_wait([this](const boost::system::error_code&) { Round(); });
    }
  }

  // Every connection, to let go of those still waiting when the server stops.
  void Register(const std::shared_ptr<Flow>& f) {
    std::lock_guard<std::mutex> l(mu_);
    if (flows_.size() >= 1024 && flows_.size() >= 2 * connections.load()) {
      std::erase_if(flows_, [](const auto& w) { return w.expired(); });
    }
    flows_.push_back(f);
  }
  void DetachAll() {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& w : flows_) {
      if (auto f = w.lock()) f->Detach();
    }
    flows_.clear();
  }

 private:
  // Starts a new window of `coalesce` once the last has passed (under round_mu_).
  void NextWindow() {
    const auto now = std::chrono::steady_clock::now();
    if (now >= window_start_ + options.coalesce) {
      window_start_ = now;
      window_flushes_ = 0;
    }
  }

  void Round() {
    std::vector<std::shared_ptr<Flow>> round;
    {
      std::lock_guard<std::mutex> l(round_mu_);
      round.swap(due_);
      round_pending_ = false;
      NextWindow();
      window_flushes_ += round.size();
    }
    for (auto& f : round) f->PostFlush();
  }

  std::mutex mu_;
  std::vector<std::weak_ptr<Flow>> flows_;

  std::mutex round_mu_;
  std::vector<std::shared_ptr<Flow>> due_;
  bool round_pending_ = false;
  std::chrono::steady_clock::time_point window_start_;
  size_t window_flushes_ = 0;
  net::steady_timer round_timer_;
};

}  // namespace mkube::http::detail
