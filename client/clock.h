#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace mkube::client {

// Where time comes from, for everything whose behaviour depends on it (back-off, leases,
// probes, grace periods, work-queue delays): the real clock in the daemons, a FakeClock
// (client/testing/fake_clock.h) in tests, which moves only when the test says so.
class Clock {
 public:
  virtual ~Clock() = default;

  virtual absl::Time Now() const = 0;
  // With `mu` held: waits until `cond` holds or this clock reaches `deadline`, and returns
  // whether `cond` holds. Like absl::Mutex::AwaitWithDeadline, `mu` may be released while
  // waiting; `cond` is evaluated with it held.
  virtual bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                                 absl::Time deadline) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  bool AwaitWithTimeout(absl::Mutex* mu, const absl::Condition& cond, absl::Duration timeout) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return AwaitWithDeadline(mu, cond, Now() + timeout);
  }
  // Waits (holding no lock) until the clock has advanced by `d`.
  void SleepFor(absl::Duration d) const;
};

// The system's clock; lives as long as the process.
Clock* RealClock();

}  // namespace mkube::client
