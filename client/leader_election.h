#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "client/client.h"
#include "proto/api/apps.pb.h"

namespace mkube::client {

// Lease-based leader election, as client-go's: candidates race to hold a Lease object; the
// holder renews it every retry period; the others take it over once it has gone unrenewed
// for a lease duration (timed by their own clocks, from when they last saw it change).
class LeaderElector {
 public:
  struct Config {
    std::string lease_namespace = "kube-system";
    std::string lease_name;
    std::string identity;
    std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
    std::chrono::milliseconds renew_deadline{std::chrono::seconds(10)};
    std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
    std::function<void()> on_started_leading;
    std::function<void()> on_stopped_leading;
  };

  LeaderElector(ApiClient* client, Config config);
  ~LeaderElector();

  void Start();
  // Stops trying; a leader gives the lease up so another can take it at once.
  void Stop();
  bool IsLeader() const { return leading_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  void Run();
  // One attempt to acquire or renew; true when this candidate holds the lease afterwards.
  bool TryAcquireOrRenew();
  void Release();

  ApiClient* client_;
  Config config_;
  std::atomic<bool> leading_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // What this candidate last saw of the lease, and when it saw it change.
  std::string observed_holder_;
  std::string observed_renew_;
  Clock::time_point observed_at_;
  Clock::time_point last_renewed_;
  std::thread thread_;
};

}  // namespace mkube::client
