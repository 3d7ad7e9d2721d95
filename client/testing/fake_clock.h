#pragma once

#include <atomic>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/clock.h"

namespace mkube::client::testing {

// A clock that moves only when told (Advance, Set), as client-go's fake clock: code waiting on
// it wakes when the time it waits for is reached, however little real time has passed.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000));

  absl::Time Now() const override;
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  void Advance(absl::Duration d);
  void Set(absl::Time t);
  // How many threads wait on this clock now: lets a test wait until the code under test has
  // gone to sleep before moving time.
  int waiters() const;
  // Waits (in real time, up to `timeout`) until at least n threads wait on this clock.
  bool WaitForWaiters(int n, absl::Duration timeout = absl::Seconds(10)) const;

 private:
  struct Wait;
  static bool Due(const Wait* w);
  // Wakes every waiter so that it looks at the time again.
  void Poke() ABSL_EXCLUSIVE_LOCKS_REQUIRED(waiters_mu_);

  std::atomic<int64_t> now_ns_;
  // Lock order: waiters_mu_ before any waiter's mutex (a waiter never holds its own mutex
  // while it takes this one).
  mutable absl::Mutex waiters_mu_;
  mutable std::multiset<absl::Mutex*> waiting_ ABSL_GUARDED_BY(waiters_mu_);
};

}  // namespace mkube::client::testing
