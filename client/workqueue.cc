#include "client/workqueue.h"

#include <algorithm>
#include <cmath>

namespace mkube::client {

WorkQueue::WorkQueue(Options options) : options_(options) {
  delay_thread_ = std::thread([this] { DelayLoop(); });
}

WorkQueue::~WorkQueue() {
  ShutDown();
  if (delay_thread_.joinable()) delay_thread_.join();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_ || dirty_.contains(key)) return;
  dirty_.insert(key);
  if (processing_.contains(key)) return;  // queued again by Done
  queue_.push_back(key);
  cv_.notify_all();
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) {
    Add(key);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return;
  delayed_.emplace(Clock::now() + delay, key);
  cv_.notify_all();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::chrono::milliseconds delay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int n = failures_[key]++;
    const double d = static_cast<double>(options_.base_delay.count()) * std::pow(2.0, std::min(n, 40));
    delay = std::chrono::milliseconds(static_cast<int64_t>(
        std::min(d, static_cast<double>(options_.max_delay.count()))));
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

int WorkQueue::Requeues(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty() || shutting_down_; });
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  if (dirty_.contains(key)) {
    queue_.push_back(key);
    cv_.notify_all();
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

size_t WorkQueue::Len() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void WorkQueue::DelayLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!shutting_down_) {
    if (delayed_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto first = delayed_.begin();
    if (first->first > Clock::now()) {
      cv_.wait_until(lock, first->first);
      continue;
    }
    std::string key = first->second;
    delayed_.erase(first);
    if (!dirty_.contains(key)) {
      dirty_.insert(key);
      if (!processing_.contains(key)) queue_.push_back(key);
      cv_.notify_all();
    }
  }
}

}  // namespace mkube::client
