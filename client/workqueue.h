#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/metrics.h"
#include "absl/time/time.h"
#include "client/clock.h"

namespace mkube::client {

// A queue of keys ("namespace/name") for controllers, as client-go's: a key waiting twice is
// queued once; a key being processed is never handed to a second worker (if added meanwhile,
// it comes back after Done); failures come back after an exponential, per-key backoff.
// Delays are measured on the clock it is given; a delayed key joins the queue once that clock
// reaches its time (looked at by Get and Len, so there is no thread of its own).
class WorkQueue {
 public:
  struct Options {
    absl::Duration base_delay = absl::Milliseconds(5);
    absl::Duration max_delay = absl::Seconds(1000);
    // Named queues report workqueue_depth, workqueue_adds_total and workqueue_retries_total
    // with this name in the process's metrics, as client-go's do.
    std::string name;
  };
  explicit WorkQueue(Clock* clock = RealClock()) : WorkQueue(Options{}, clock) {}
  explicit WorkQueue(Options options, Clock* clock = RealClock());
  ~WorkQueue();

  void Add(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds after a delay (at once when it is not positive). A key already waiting keeps the
  // earlier of its two times, as client-go's delaying queue does: it comes back once.
  void AddAfter(const std::string& key, absl::Duration delay) ABSL_LOCKS_EXCLUDED(mu_);
  // Adds after this key's next backoff step (5 ms, 10 ms, 20 ms, ... up to max_delay).
  void AddRateLimited(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  // The delay the next AddRateLimited of this key will wait.
  absl::Duration NextDelay(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);
  // Resets the key's backoff (after a success).
  void Forget(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  int Requeues(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks for the next key; nullopt once shut down and drained.
  std::optional<std::string> Get() ABSL_LOCKS_EXCLUDED(mu_);
  // Marks the key processed; if it was added meanwhile, it is queued again.
  void Done(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  void ShutDown() ABSL_LOCKS_EXCLUDED(mu_);
  // Keys ready to be handed out now (delayed ones not yet due are not counted).
  size_t Len() const ABSL_LOCKS_EXCLUDED(mu_);
  // Keys waiting for their delay.
  size_t Delayed() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the delayed keys that are due into the queue.
  void PromoteDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration DelayFor(int failures) const;
  void Measure() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (depth_) depth_->Set(static_cast<double>(queue_.size()));
  }

  const Options options_;
  Clock* const clock_;
  mutable absl::Mutex mu_;
  // Promoting due keys is bookkeeping that readers (Len) may do too.
  mutable std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  mutable std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);  // waiting to be processed
  std::set<std::string> processing_ ABSL_GUARDED_BY(mu_);     // handed to a worker
  std::map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
  mutable std::multimap<absl::Time, std::string> delayed_ ABSL_GUARDED_BY(mu_);
  mutable std::map<std::string, absl::Time> waiting_ ABSL_GUARDED_BY(mu_);  // delayed_ by key
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  // Its metrics, when named.
  metrics::Gauge* depth_ = nullptr;
  metrics::Counter* adds_ = nullptr;
  metrics::Counter* retries_ = nullptr;
};

}  // namespace mkube::client
