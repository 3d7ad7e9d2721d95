#pragma once

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace mkube::apiserver::rest {

// Runs callbacks at their deadlines, on one thread; a callback no longer wanted is cancelled
// and goes at once, not at its deadline.
class Deadlines {
 public:
  using Clock = std::chrono::steady_clock;

  Deadlines() : thread_([this] { Run(); }) {}
  ~Deadlines() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // Runs `f` at `when`; returns its id for Cancel (0: refused, once stopping).
  uint64_t At(Clock::time_point when, std::function<void()> f) {
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return 0;
      id = ++last_id_;
      index_[id] = due_.emplace(when, Due{id, std::move(f)});
    }
    cv_.notify_all();
    return id;
  }
  // Forgets the callback `id` unless it has run or is running.
  void Cancel(uint64_t id) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return;
    due_.erase(it->second);
    index_.erase(it);
  }
  // Runs every pending callback now.
  void Flush() {
    std::multimap<Clock::time_point, Due> due;
    {
      std::lock_guard<std::mutex> l(mu_);
      due.swap(due_);
      index_.clear();
    }
    for (auto& [t, d] : due) d.f();
  }

 private:
  struct Due {
    uint64_t id;
    std::function<void()> f;
  };

  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      if (due_.empty()) {
        cv_.wait(l);
        continue;
      }
      auto first = due_.begin();
      if (first->first > Clock::now()) {
        // A copy: Flush or Cancel may free the entry while this waits.
        const auto when = first->first;
        cv_.wait_until(l, when);
        continue;
      }
      auto f = std::move(first->second.f);
      index_.erase(first->second.id);
      due_.erase(first);
      l.unlock();
      f();
      l.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t last_id_ = 0;
  std::multimap<Clock::time_point, Due> due_;
  std::map<uint64_t, std::multimap<Clock::time_point, Due>::iterator> index_;  // due_ by id
  std::thread thread_;
};

}  // namespace mkube::apiserver::rest
