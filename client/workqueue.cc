#include "client/workqueue.h"

#include <algorithm>

namespace mkube::client {

WorkQueue::WorkQueue(Options options, Clock* clock) : options_(options), clock_(clock) {
  if (options_.name.empty()) return;
  auto& r = metrics::Registry::Default();
  depth_ = &r.AddGauge("workqueue_depth", "Current depth of workqueue", {"name"}).With({options_.name});
  adds_ = &r.AddCounter("workqueue_adds_total", "Total number of adds handled by workqueue",
                        {"name"})
               .With({options_.name});
  retries_ = &r.AddCounter("workqueue_retries_total", "Total number of retries handled by workqueue",
                           {"name"})
                  .With({options_.name});
}

WorkQueue::~WorkQueue() { ShutDown(); }

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.contains(key)) return;
  dirty_.insert(key);
  if (adds_) adds_->Inc();
  if (processing_.contains(key)) return;  // queued again by Done
  queue_.push_back(key);
  Measure();
}

void WorkQueue::Add(const std::string& key) {
  absl::MutexLock lock(&mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  if (delay <= absl::ZeroDuration()) {
    AddLocked(key);
  } else if (!shutting_down_) {
    const absl::Time at = clock_->Now() + delay;
    auto [it, fresh] = waiting_.try_emplace(key, at);
    if (!fresh) {
      if (it->second <= at) return;
      // Due sooner now: the later entry goes.
      auto [first, last] = delayed_.equal_range(it->second);
      for (auto d = first; d != last; ++d) {
        if (d->second == key) {
          delayed_.erase(d);
          break;
        }
      }
      it->second = at;
    }
    delayed_.emplace(at, key);
  }
}

absl::Duration WorkQueue::DelayFor(int failures) const {
  absl::Duration d = options_.base_delay;
  for (int i = 0; i < failures && d < options_.max_delay; ++i) d *= 2;
  return std::min(d, options_.max_delay);
}

void WorkQueue::AddRateLimited(const std::string& key) {
  absl::Duration delay;
  {
    absl::MutexLock lock(&mu_);
    delay = DelayFor(failures_[key]++);
    if (retries_) retries_->Inc();
  }
  AddAfter(key, delay);
}

absl::Duration WorkQueue::NextDelay(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = failures_.find(key);
  return DelayFor(it == failures_.end() ? 0 : it->second);
}

void WorkQueue::Forget(const std::string& key) {
  absl::MutexLock lock(&mu_);
  failures_.erase(key);
}

int WorkQueue::Requeues(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDue() const {
  const absl::Time now = clock_->Now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    std::string key = std::move(delayed_.begin()->second);
    delayed_.erase(delayed_.begin());
    waiting_.erase(key);
    if (shutting_down_ || dirty_.contains(key)) continue;
    dirty_.insert(key);
    if (adds_) adds_->Inc();
    if (!processing_.contains(key)) queue_.push_back(std::move(key));
  }
  Measure();
}

std::optional<std::string> WorkQueue::Get() {
  absl::MutexLock lock(&mu_);
  absl::Time until = absl::InfiniteFuture();
  // Something to hand out, or a delayed key due sooner than the wait was planned for.
  auto wake = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || shutting_down_ ||
           (!delayed_.empty() && delayed_.begin()->first < until);
  };
  for (;;) {
    PromoteDue();
    if (!queue_.empty() || shutting_down_) break;
    until = delayed_.empty() ? absl::InfiniteFuture() : delayed_.begin()->first;
    clock_->AwaitWithDeadline(&mu_, absl::Condition(&wake), until);
  }
  // Once shut down, what is queued is still handed out (drained), then nothing.
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  Measure();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  processing_.erase(key);
  if (dirty_.contains(key)) queue_.push_back(key);
  Measure();
}

void WorkQueue::ShutDown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
}

size_t WorkQueue::Len() const {
  absl::MutexLock lock(&mu_);
  PromoteDue();
  return queue_.size();
}

size_t WorkQueue::Delayed() const {
  absl::MutexLock lock(&mu_);
  PromoteDue();
  return delayed_.size();
}

}  // namespace mkube::client
