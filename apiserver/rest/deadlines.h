#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace mkube::apiserver::rest {

// Runs callbacks at their deadlines, on one thread.
class Deadlines {
 public:
  Deadlines() : thread_([this] { Run(); }) {}
  ~Deadlines() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void At(std::chrono::steady_clock::time_point when, std::function<void()> f) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;
      due_.emplace(when, std::move(f));
    }
    cv_.notify_all();
  }
  // Runs every pending callback now.
  void Flush() {
    std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> due;
    {
      std::lock_guard<std::mutex> l(mu_);
      due.swap(due_);
    }
    for (auto& [t, f] : due) f();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      if (due_.empty()) {
        cv_.wait(l);
        continue;
      }
      auto first = due_.begin();
      if (first->first > std::chrono::steady_clock::now()) {
        // A copy: Flush may free the entry while this waits.
        const auto when = first->first;
        cv_.wait_until(l, when);
        continue;
      }
      auto f = std::move(first->second);
      due_.erase(first);
      l.unlock();
      f();
      l.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> due_;
  std::thread thread_;
};

}  // namespace mkube::apiserver::rest
