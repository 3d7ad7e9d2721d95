#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "proto/api/apps.pb.h"
#include "scheduler/framework/config.h"
#include "scheduler/internal/cache.h"
#include "scheduler/internal/queue.h"

namespace mkube::scheduler {

// The annotation that asks the scheduler to explain its decision for a pod (as an event of
// reason SchedulingExplained that `mkubectl describe pod` shows).
inline constexpr char kExplainAnnotation[] = "scheduler.mkube.io/explain";
inline constexpr char kExplainedReason[] = "SchedulingExplained";

struct SchedulerOptions {
  client::Clock* clock = client::RealClock();
  uint64_t seed = std::random_device{}();
  int bind_workers = 8;
  size_t max_binds_in_flight = 1024;  // the scheduling loop waits beyond this
  SchedulingQueue::Options queue;
};

// kube-scheduler's scheduling loop: pods from the queue, one at a time, through their
// profile's filters and scores against a snapshot of the cache; the chosen node is assumed
// at once (the next pod sees it) and the binding is posted by a pool of binders, so the loop
// never waits for the apiserver. A failed binding forgets the assumption and retries the pod.
class Scheduler final : public framework::Handle {
 public:
  // `events` may be null (no events); `profiles` must hold at least one.
  Scheduler(client::ApiClient* client, client::EventRecorder* events,
            std::vector<framework::Profile> profiles, SchedulerOptions options = {});
  ~Scheduler() override;

  // What the scheduler needs to hear of pods (all of them), nodes and ReplicaSets.
  client::Informer<api::Pod>::Handlers PodHandlers();
  client::Informer<api::Node>::Handlers NodeHandlers();
  // Where default spreading finds the controllers selecting a pod (not set: none).
  void SetReplicaSets(client::Informer<api::ReplicaSet>* replica_sets) {
    replica_sets_ = replica_sets;
  }
  // Where pod affinity terms find namespaces by label (not set: no namespace has labels).
  void SetNamespaces(client::Informer<api::Namespace>* namespaces) { namespaces_ = namespaces; }

  // Schedules pods until Stop (on the calling thread).
  void Run();
  // One pod; false once the queue is closed. Tests call it directly.
  bool ScheduleOne();
  void Stop();
  // Waits until every binding posted so far has been answered.
  void WaitForBindings() ABSL_LOCKS_EXCLUDED(bind_mu_);

  std::vector<api::LabelSelector> OwnerSelectors(const api::Pod& pod) const override;
  framework::LabelMap NamespaceLabels(const std::string& name) const override;
  std::vector<std::string> NamespacesMatching(const api::Selector& selector) const override;

  SchedulingQueue& queue() { return queue_; }
  Cache& cache() { return cache_; }
  uint64_t scheduled() const { return scheduled_.load(); }
  uint64_t attempts() const { return attempts_.load(); }

 private:
  const framework::Profile* ProfileFor(const api::Pod& pod) const;
  bool Responsible(const api::Pod& pod) const { return ProfileFor(pod) != nullptr; }
  void OnPodAdd(const framework::PodPtr& pod);
  void OnPodUpdate(const framework::PodPtr& old_pod, const framework::PodPtr& pod);
  void OnPodDelete(const framework::PodPtr& pod);
  void OnNodeUpdate(const std::shared_ptr<const api::Node>& old_node,
                    const std::shared_ptr<const api::Node>& node);

  void Failed(QueuedPod qp, const framework::ScheduleResult& result, uint64_t cycle);
  void Explain(const api::Pod& pod, const framework::ScheduleResult& result, size_t num_nodes);
  // Runs `task` on a binder thread; waits while too many are in flight.
  void Submit(std::function<void()> task) ABSL_LOCKS_EXCLUDED(bind_mu_);
  void BindLoop() ABSL_LOCKS_EXCLUDED(bind_mu_);
  // Asks the apiserver to bind the pod (waits while too many bindings or tasks are in
  // flight); BindingAnswered takes the answer.
  void StartBind(QueuedPod qp, std::string node) ABSL_LOCKS_EXCLUDED(bind_mu_);
  void BindingAnswered(const QueuedPod& qp, const std::string& node, const absl::Status& bound);
  void SetUnschedulableCondition(const api::Pod& pod, const std::string& message);

  client::ApiClient* const client_;
  client::EventRecorder* const events_;
  const std::vector<framework::Profile> profiles_;
  const SchedulerOptions options_;
  client::Informer<api::ReplicaSet>* replica_sets_ = nullptr;
  client::Informer<api::Namespace>* namespaces_ = nullptr;
  Cache cache_;
  SchedulingQueue queue_;
  // Only the scheduling loop touches these.
  framework::Snapshot snapshot_;
  std::mt19937_64 rng_;
  size_t next_start_index_ = 0;

  absl::Mutex bind_mu_;
  std::deque<std::function<void()>> bind_tasks_ ABSL_GUARDED_BY(bind_mu_);
  size_t binds_in_flight_ ABSL_GUARDED_BY(bind_mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(bind_mu_) = false;
  std::vector<std::thread> binders_;
  std::atomic<uint64_t> scheduled_{0}, attempts_{0};
};

}  // namespace mkube::scheduler
