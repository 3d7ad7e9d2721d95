#include "scheduler/internal/queue.h"

#include <algorithm>

#include "api/object.h"

namespace mkube::scheduler {

using framework::PodKey;

absl::Time SchedulingQueue::BackoffEnd(const QueuedPod& pod) const {
  absl::Duration d = options_.initial_backoff;
  for (int i = 1; i < pod.attempts && d < options_.max_backoff; ++i) d *= 2;
  return pod.timestamp + std::min(d, options_.max_backoff);
}

void SchedulingQueue::Unlink(const std::string& key, Entry& e) {
  switch (e.where) {
    case Where::kActive:
      active_.erase(e.order);
      break;
    case Where::kBackoff:
      backoff_.erase(e.timed);
      break;
    case Where::kUnschedulable:
      unschedulable_.erase(e.timed);
      break;
    case Where::kInFlight:
      break;
  }
}

void SchedulingQueue::ToActive(const std::string& key, Entry& e) {
  Unlink(key, e);
  e.where = Where::kActive;
  e.order = {e.pod.pod->spec().priority(), e.pod.timestamp, ++seq_};
  active_.emplace(e.order, key);
}

void SchedulingQueue::ToBackoff(const std::string& key, Entry& e) {
  Unlink(key, e);
  e.where = Where::kBackoff;
  e.timed = backoff_.emplace(BackoffEnd(e.pod), key);
  ++timers_changed_;  // a sleeping Pop may have to wake earlier
}

void SchedulingQueue::ToUnschedulable(const std::string& key, Entry& e) {
  Unlink(key, e);
  e.where = Where::kUnschedulable;
  e.timed = unschedulable_.emplace(e.pod.timestamp, key);
  ++timers_changed_;
}

void SchedulingQueue::Add(framework::PodPtr pod) {
  absl::MutexLock lock(&mu_);
  const std::string key = PodKey(*pod);
  const absl::Time now = clock_->Now();
  auto [it, added] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (added) {
    e.pod = {.pod = std::move(pod), .timestamp = now, .first_seen = now};
    ToActive(key, e);
    return;
  }
  // Only a change the scheduler could see moves the pod: not its status (the scheduler's own
  // PodScheduled condition among it), as kube-scheduler's isPodUpdated.
  const bool changed =
      !api::Equal(e.pod.pod->spec(), pod->spec()) ||
      !api::SameMap(e.pod.pod->metadata().labels(), pod->metadata().labels()) ||
      !api::SameMap(e.pod.pod->metadata().annotations(), pod->metadata().annotations());
  e.pod.pod = std::move(pod);
  if (!changed) return;
  switch (e.where) {
    case Where::kActive:
    case Where::kBackoff:
      break;  // already on its way
    case Where::kUnschedulable:
      // Its new spec may fit now.
      if (BackoffEnd(e.pod) > now) {
        ToBackoff(key, e);
      } else {
        ToActive(key, e);
      }
      break;
    case Where::kInFlight:
      e.updated_in_flight = true;
      break;
  }
}

void SchedulingQueue::Delete(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Unlink(key, it->second);
  entries_.erase(it);
}

void SchedulingQueue::Promote() {
  const absl::Time now = clock_->Now();
  while (!backoff_.empty() && backoff_.begin()->first <= now) {
    const std::string key = backoff_.begin()->second;
    ToActive(key, entries_.at(key));
  }
  while (!unschedulable_.empty() &&
         unschedulable_.begin()->first + options_.max_unschedulable <= now) {
    const std::string key = unschedulable_.begin()->second;
    Entry& e = entries_.at(key);
    if (BackoffEnd(e.pod) > now) {
      ToBackoff(key, e);
    } else {
      ToActive(key, e);
    }
  }
}

bool SchedulingQueue::HasWork() const {
  return closed_ || !active_.empty() || timers_changed_ != timers_seen_;
}

std::optional<QueuedPod> SchedulingQueue::Pop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    Promote();
    if (closed_) return std::nullopt;
    if (!active_.empty()) break;
    // Sleep until a back-off or an unschedulable stay ends, or a pod is added.
    absl::Time wake = absl::InfiniteFuture();
    if (!backoff_.empty()) wake = backoff_.begin()->first;
    if (!unschedulable_.empty()) {
      wake = std::min(wake, unschedulable_.begin()->first + options_.max_unschedulable);
    }
    timers_seen_ = timers_changed_;
    clock_->AwaitWithDeadline(&mu_, absl::Condition(this, &SchedulingQueue::HasWork), wake);
  }
  const std::string key = active_.begin()->second;
  Entry& e = entries_.at(key);
  Unlink(key, e);
  e.where = Where::kInFlight;
  e.updated_in_flight = false;
  ++cycle_;
  ++e.pod.attempts;
  return e.pod;
}

uint64_t SchedulingQueue::cycle() const {
  absl::MutexLock lock(&mu_);
  return cycle_;
}

void SchedulingQueue::Requeue(QueuedPod pod, bool unschedulable, uint64_t cycle) {
  absl::MutexLock lock(&mu_);
  const std::string key = PodKey(*pod.pod);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.where != Where::kInFlight) return;  // deleted meanwhile
  Entry& e = it->second;
  // The queue's copy of the pod is the newest (updates during the attempt went there).
  pod.pod = e.pod.pod;
  pod.timestamp = clock_->Now();
  e.pod = std::move(pod);
  // Something happened during the attempt that could change its verdict: retry after back-off.
  if (!unschedulable || e.updated_in_flight || move_request_cycle_ >= cycle) {
    ToBackoff(key, e);
  } else {
    ToUnschedulable(key, e);
  }
}

void SchedulingQueue::AddUnschedulable(QueuedPod pod, uint64_t cycle) {
  Requeue(std::move(pod), true, cycle);
}

void SchedulingQueue::AddBackoff(QueuedPod pod) { Requeue(std::move(pod), false, 0); }

void SchedulingQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.where == Where::kInFlight) entries_.erase(it);
}

void SchedulingQueue::OnEvent(const ClusterEvent& event) {
  absl::MutexLock lock(&mu_);
  move_request_cycle_ = cycle_;
  const absl::Time now = clock_->Now();
  std::vector<std::string> moving;
  for (const auto& [when, key] : unschedulable_) {
    const QueuedPod& p = entries_.at(key).pod;
    bool helps = event.plugins.empty() || p.rejected_by.empty();
    for (const auto& plugin : p.rejected_by) helps = helps || event.plugins.contains(plugin);
    if (helps) moving.push_back(key);
  }
  for (const auto& key : moving) {
    Entry& e = entries_.at(key);
    if (BackoffEnd(e.pod) > now) {
      ToBackoff(key, e);
    } else {
      ToActive(key, e);
    }
  }
}

void SchedulingQueue::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

size_t SchedulingQueue::ActiveCount() {
  absl::MutexLock lock(&mu_);
  Promote();
  return active_.size();
}
size_t SchedulingQueue::BackoffCount() {
  absl::MutexLock lock(&mu_);
  Promote();
  return backoff_.size();
}
size_t SchedulingQueue::UnschedulableCount() {
  absl::MutexLock lock(&mu_);
  Promote();
  return unschedulable_.size();
}

}  // namespace mkube::scheduler
