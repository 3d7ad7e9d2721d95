#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "grpcpp/grpcpp.h"

namespace mkube::apiserver::rest {

// The long-lived streams relayed to agents (logs, exec, attach, port forwarding): each runs on
// threads of its own around one agent call; Stop cancels every call and waits for the threads.
class Relays {
 public:
  ~Relays() { Stop(); }

  // A context for an agent call, cancelled by Stop; null once stopping.
  std::shared_ptr<grpc::ClientContext> Open() {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return nullptr;
    auto ctx = std::make_shared<grpc::ClientContext>();
    std::erase_if(contexts_, [](const auto& w) { return w.expired(); });
    contexts_.push_back(ctx);
    return ctx;
  }
  // Runs `f` on a thread of its own, counted until it returns; false once stopping.
  bool Spawn(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return false;
      ++threads_;
    }
    std::thread([this, f = std::move(f)] {
      f();
      std::lock_guard<std::mutex> l(mu_);
      if (--threads_ == 0) cv_.notify_all();
    }).detach();
    return true;
  }
  // Cancels every call; returns once every thread has ended. Idempotent.
  void Stop() {
    std::unique_lock<std::mutex> l(mu_);
    stop_ = true;
    for (const auto& w : contexts_) {
      if (auto ctx = w.lock()) ctx->TryCancel();
    }
    cv_.wait(l, [this] { return threads_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  size_t threads_ = 0;
  std::vector<std::weak_ptr<grpc::ClientContext>> contexts_;
};

}  // namespace mkube::apiserver::rest
