#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace mkube::client {

// A queue of keys ("namespace/name") for controllers, as client-go's: a key waiting twice is
// queued once; a key being processed is never handed to a second worker (if added meanwhile,
// it comes back after Done); failures come back after an exponential, per-key backoff.
class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::chrono::milliseconds base_delay{5};
    std::chrono::milliseconds max_delay{1000 * 1000};
  };
  WorkQueue() : WorkQueue(Options{}) {}
  explicit WorkQueue(Options options);
  ~WorkQueue();

  void Add(const std::string& key);
  // Adds after a delay.
  void AddAfter(const std::string& key, std::chrono::milliseconds delay);
  // Adds after this key's next backoff step (5 ms, 10 ms, 20 ms, ... up to max_delay).
  void AddRateLimited(const std::string& key);
  // Resets the key's backoff (after a success).
  void Forget(const std::string& key);
  int Requeues(const std::string& key) const;

  // Blocks for the next key; nullopt once shut down and drained.
  std::optional<std::string> Get();
  // Marks the key processed; if it was added meanwhile, it is queued again.
  void Done(const std::string& key);
  void ShutDown();
  size_t Len() const;

 private:
  void DelayLoop();

  Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);       // waiting to be processed
  std::set<std::string> processing_ ABSL_GUARDED_BY(mu_);  // handed to a worker
  std::map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
  std::multimap<Clock::time_point, std::string> delayed_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::thread delay_thread_;
};

}  // namespace mkube::client
