#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/clock.h"
#include "proto/api/apps.pb.h"

namespace mkube::client {

// Lease-based leader election, as client-go's: candidates race to hold a Lease object; the
// holder renews it every retry period; the others take it over once it has gone unrenewed
// for a lease duration (timed by their own clocks, from when they last saw it change). A
// leader that has not renewed for the renew deadline stops leading; so that a store or
// apiserver restart costs one failed try rather than the lease, give it a client whose calls
// wait through a reconnect and end well within the deadline (ElectionClientOptions).
class LeaderElector {
 public:
  struct Config {
    std::string lease_namespace = "kube-system";
    std::string lease_name;
    std::string identity;
    absl::Duration lease_duration = absl::Seconds(15);
    absl::Duration renew_deadline = absl::Seconds(10);
    absl::Duration retry_period = absl::Seconds(2);
    std::function<void()> on_started_leading;
    std::function<void()> on_stopped_leading;
  };

  LeaderElector(ApiClient* client, Config config, Clock* clock = RealClock());
  ~LeaderElector();

  void Start();
  // Stops trying; a leader gives the lease up so another can take it at once.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  bool IsLeader() const { return leading_.load(); }

 private:
  void Run();
  // One attempt to acquire or renew: OK when this candidate holds the lease afterwards,
  // FailedPrecondition while another holds it, or why the attempt failed.
  absl::Status TryAcquireOrRenew();
  void Release();

  ApiClient* client_;
  const Config config_;
  Clock* const clock_;
  std::atomic<bool> leading_{false};
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Only the election's thread uses these: what this candidate last saw of the lease, and
  // when (by its own clock) it saw it change.
  std::string observed_holder_;
  std::string observed_renew_;
  absl::Time observed_at_ = absl::InfinitePast();
  absl::Time last_renewed_ = absl::InfinitePast();
  std::thread thread_;
};

}  // namespace mkube::client
