#include "client/clock.h"

namespace mkube::client {
namespace {

class SystemClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return mu->AwaitWithDeadline(cond, deadline);
  }
};

constexpr bool kNever = false;

}  // namespace

void Clock::SleepFor(absl::Duration d) const {
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  AwaitWithDeadline(&mu, absl::Condition(&kNever), Now() + d);
}

Clock* RealClock() {
  static SystemClock* clock = new SystemClock();
  return clock;
}

}  // namespace mkube::client
