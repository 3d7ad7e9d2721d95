#pragma once

#include <chrono>
#include <thread>

namespace mkube::testing {

// Polls pred until it holds or `limit` passes; returns its last value. For conditions that
// other processes or threads make true, never for timing assertions.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

// Polls pred for all of `span`; whether it held every time. For what must not happen (two
// leaders at once, a container started twice), where no event says the danger is over.
template <typename Pred>
bool Consistently(Pred pred, std::chrono::milliseconds span) {
  return !Eventually([&] { return !pred(); }, span);
}

}  // namespace mkube::testing
