#pragma once

#include <chrono>

namespace mkube::store {

// Time source, injected so lease expiry can be tested without waiting.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point Now() const = 0;
};

class SteadyClock : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::now();
  }
};

}  // namespace mkube::store
