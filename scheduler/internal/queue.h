#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/clock.h"
#include "scheduler/framework/node_info.h"

namespace mkube::scheduler {

// A pending pod as the queue keeps it.
struct QueuedPod {
  framework::PodPtr pod;
  int attempts = 0;                   // scheduling attempts so far
  absl::Time timestamp;               // when it last entered the queue
  absl::Time first_seen;              // when it first did
  std::set<std::string> rejected_by;  // plugins that found it unschedulable last time
};

// What changed in the cluster, for moving unschedulable pods: which plugins' verdicts the
// change could turn (empty: any).
struct ClusterEvent {
  std::string label;  // "NodeAdd", "NodeTaintChange", "AssignedPodDelete", ...
  std::set<std::string> plugins;
};

// The scheduling queue, as kube-scheduler's: an active queue (by priority, then age) the
// scheduler pops from; a back-off queue of pods that failed and wait 1 s doubling to 10 s
// (per attempt) before another try; and the unschedulable pods, which wait for a cluster
// event that could make them fit — a node added, relabelled, untainted, uncordoned, a pod
// deleted — or at most `max_unschedulable` before being tried again anyway.
class SchedulingQueue {
 public:
  struct Options {
    absl::Duration initial_backoff = absl::Seconds(1);
    absl::Duration max_backoff = absl::Seconds(10);
    absl::Duration max_unschedulable = absl::Minutes(5);
  };
  explicit SchedulingQueue(client::Clock* clock) : SchedulingQueue(Options{}, clock) {}
  SchedulingQueue(Options options, client::Clock* clock) : options_(options), clock_(clock) {}

  // A new pending pod; an update of one already queued (an update of an unschedulable one
  // moves it, as its new spec may fit).
  void Add(framework::PodPtr pod) ABSL_LOCKS_EXCLUDED(mu_);
  void Update(framework::PodPtr pod) ABSL_LOCKS_EXCLUDED(mu_) { Add(std::move(pod)); }
  void Delete(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);

  // The next pod to schedule; waits for one (on the queue's clock, so back-off ends are
  // noticed). Empty after Close.
  std::optional<QueuedPod> Pop() ABSL_LOCKS_EXCLUDED(mu_);
  // After a failed attempt: unschedulable pods wait for an event (or for back-off when one
  // came during the attempt); errors always back off.
  void AddUnschedulable(QueuedPod pod, uint64_t cycle) ABSL_LOCKS_EXCLUDED(mu_);
  void AddBackoff(QueuedPod pod) ABSL_LOCKS_EXCLUDED(mu_);
  // The popped pod was assumed on a node: the queue lets it go.
  void Done(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  // The attempt's number, taken when a pod is popped: events after it move pods it returns.
  uint64_t cycle() const ABSL_LOCKS_EXCLUDED(mu_);
  // Unschedulable pods the event could help go back: to back-off if theirs has not ended,
  // else to the active queue.
  void OnEvent(const ClusterEvent& event) ABSL_LOCKS_EXCLUDED(mu_);
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  // How many pods are where, once the back-offs and waits that have ended are over.
  size_t ActiveCount() ABSL_LOCKS_EXCLUDED(mu_);
  size_t BackoffCount() ABSL_LOCKS_EXCLUDED(mu_);
  size_t UnschedulableCount() ABSL_LOCKS_EXCLUDED(mu_);
  // When the pod's current back-off ends (attempts so far decide its length).
  absl::Time BackoffEnd(const QueuedPod& pod) const;

 private:
  // Active order: higher priority first, then older.
  struct Order {
    int32_t priority;
    absl::Time timestamp;
    uint64_t seq;
    bool operator<(const Order& o) const {
      if (priority != o.priority) return priority > o.priority;
      if (timestamp != o.timestamp) return timestamp < o.timestamp;
      return seq < o.seq;
    }
  };
  enum class Where { kActive, kBackoff, kUnschedulable, kInFlight };
  using TimeIndex = std::multimap<absl::Time, std::string>;
  struct Entry {
    QueuedPod pod;
    Where where = Where::kActive;
    Order order{};                   // in the active queue
    TimeIndex::iterator timed;       // in the back-off or unschedulable index
    bool updated_in_flight = false;  // changed while being scheduled: try again soon
  };
  void ToActive(const std::string& key, Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ToBackoff(const std::string& key, Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unlink(const std::string& key, Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Back-offs that have ended and unschedulable pods that waited long enough go active.
  void Promote() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Requeue(QueuedPod pod, bool unschedulable, uint64_t cycle) ABSL_LOCKS_EXCLUDED(mu_);
  void ToUnschedulable(const std::string& key, Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  client::Clock* const clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<Order, std::string> active_ ABSL_GUARDED_BY(mu_);
  TimeIndex backoff_ ABSL_GUARDED_BY(mu_);        // by back-off end
  TimeIndex unschedulable_ ABSL_GUARDED_BY(mu_);  // by when they became so
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cycle_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t move_request_cycle_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Raised whenever a back-off or unschedulable wait is added, so that a Pop asleep until a
  // later time looks again.
  uint64_t timers_changed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t timers_seen_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mkube::scheduler
