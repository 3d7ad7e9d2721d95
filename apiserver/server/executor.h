#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace mkube::apiserver::server {

// A fixed pool of threads for request work that blocks on the store, so gRPC's few
// callback threads only hand requests over and never wait on a round trip themselves.
class Executor {
 public:
  explicit Executor(size_t threads);
  ~Executor();
  void Run(std::function<void()> task);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace mkube::apiserver::server
