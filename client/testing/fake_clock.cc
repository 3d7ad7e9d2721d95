#include "client/testing/fake_clock.h"

namespace mkube::client::testing {

struct FakeClock::Wait {
  const FakeClock* clock;
  const absl::Condition* cond;
  absl::Time deadline;
};

bool FakeClock::Due(const Wait* w) { return w->cond->Eval() || w->clock->Now() >= w->deadline; }

FakeClock::FakeClock(absl::Time start) : now_ns_(absl::ToUnixNanos(start)) {}

absl::Time FakeClock::Now() const { return absl::FromUnixNanos(now_ns_.load()); }

bool FakeClock::AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                                  absl::Time deadline) const {
  const Wait wait{this, &cond, deadline};
  if (Due(&wait)) return cond.Eval();
  // Registered without holding `mu` (see the lock order); the condition is looked at again
  // once `mu` is held, so nothing that happened meanwhile is missed.
  mu->Unlock();
  {
    absl::MutexLock lock(&waiters_mu_);
    waiting_.insert(mu);
  }
  mu->Lock();
  mu->Await(absl::Condition(&FakeClock::Due, &wait));
  mu->Unlock();
  {
    absl::MutexLock lock(&waiters_mu_);
    waiting_.erase(waiting_.find(mu));
  }
  mu->Lock();
  return cond.Eval();
}

void FakeClock::Poke() {
  // absl::Mutex looks at its waiters' conditions when it is released.
  for (absl::Mutex* mu : waiting_) {
    mu->Lock();
    mu->Unlock();
  }
}

void FakeClock::Advance(absl::Duration d) {
  absl::MutexLock lock(&waiters_mu_);
  now_ns_ += absl::ToInt64Nanoseconds(d);
  Poke();
}

void FakeClock::Set(absl::Time t) {
  absl::MutexLock lock(&waiters_mu_);
  now_ns_ = absl::ToUnixNanos(t);
  Poke();
}

int FakeClock::waiters() const {
  absl::MutexLock lock(&waiters_mu_);
  return static_cast<int>(waiting_.size());
}

bool FakeClock::WaitForWaiters(int n, absl::Duration timeout) const {
  absl::MutexLock lock(&waiters_mu_);
  auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(waiters_mu_) {
    return static_cast<int>(waiting_.size()) >= n;
  };
  return waiters_mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

}  // namespace mkube::client::testing
