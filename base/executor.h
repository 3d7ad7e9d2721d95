#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace mkube {

// A fixed pool of threads for work that may block (a store round trip, a disk read), so that
// the threads that take requests (gRPC's callback threads, the store's event loops) only hand
// them over and never wait themselves.
class Executor {
 public:
  // Tasks that may wait for a thread, by default. Each is about a store round trip: with 16
  // threads at 1-5 ms, 0.6-3 s of work, inside the 10 s deadline of mkube's clients (a task
  // whose caller gave up meanwhile is skipped), and room for thousands of nodes registering
  // or renewing their leases at once. Past it a request is refused at once, as Kubernetes'
  // max-in-flight filter refuses one, rather than queued toward a deadline it would miss.
  static constexpr size_t kDefaultMaxWaiting = 10000;

  // At most `max_waiting` tasks (at least 1) wait for one of the `threads`; Run refuses more.
  explicit Executor(size_t threads, size_t max_waiting = kDefaultMaxWaiting);
  // Runs every task already accepted, then joins the threads.
  ~Executor() ABSL_LOCKS_EXCLUDED(mu_);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task` for a thread; false, with the task dropped unrun, when `max_waiting` tasks
  // already wait (the caller refuses the request: RESOURCE_EXHAUSTED, Kubernetes' 429) or
  // the executor is being destroyed.
  [[nodiscard]] bool Run(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Work() ABSL_LOCKS_EXCLUDED(mu_);

  const size_t max_waiting_;
  absl::Mutex mu_;
  absl::CondVar cv_;  // signalled once per task queued, and for every thread at the end
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);  // bounded by max_waiting_
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace mkube
