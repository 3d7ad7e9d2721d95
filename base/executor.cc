#include "base/executor.h"

#include <algorithm>

namespace mkube {

Executor::Executor(size_t threads, size_t max_waiting)
    : max_waiting_(std::max<size_t>(max_waiting, 1)) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

Executor::~Executor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  for (auto& t : threads_) t.join();
}

void Executor::Work() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && tasks_.empty()) cv_.Wait(&mu_);
      if (tasks_.empty()) return;  // stopping, with every accepted task run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

bool Executor::Run(std::function<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || tasks_.size() >= max_waiting_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.Signal();
  return true;
}

}  // namespace mkube
