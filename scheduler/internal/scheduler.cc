#include "scheduler/internal/scheduler.h"

#include "absl/strings/str_join.h"
#include "api/labels.h"
#include "api/object.h"
#include "base/log.h"
#include "base/metrics.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "scheduler/framework/explain.h"

namespace mkube::scheduler {
namespace {

using framework::PodKey;
using framework::PodPtr;

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("scheduler");
  return logger;
}

bool Bound(const api::Pod& pod) { return !pod.spec().node_name().empty(); }

// scheduler_schedule_attempts_total, as kube-scheduler counts them.
void CountAttempt(const api::Pod& pod, const char* result) {
  static auto& attempts = metrics::Registry::Default().AddCounter(
      "scheduler_schedule_attempts_total",
      "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not "
      "be scheduled, while 'error' means an internal scheduler problem.",
      {"result", "profile"});
  const std::string& profile = pod.spec().scheduler_name();
  attempts.With({result, profile.empty() ? "default-scheduler" : profile}).Inc();
}
bool Terminating(const api::Pod& pod) { return !pod.metadata().deletion_timestamp().empty(); }
bool Ended(const api::Pod& pod) {
  return pod.status().phase() == "Succeeded" || pod.status().phase() == "Failed";
}

// The plugins whose verdicts a node's change could turn.
ClusterEvent NodeChange(const api::Node& old_node, const api::Node& node) {
  ClusterEvent e{"NodeUpdate", {}};
  if (!api::SameMap(old_node.metadata().labels(), node.metadata().labels())) {
    e.plugins.insert({"NodeAffinity", "PodTopologySpread", "InterPodAffinity"});
  }
  if (!api::Equal(old_node.spec(), node.spec())) {
    e.plugins.insert({"TaintToleration", "NodeUnschedulable"});
  }
  if (!api::SameMap(old_node.status().allocatable(), node.status().allocatable())) {
    e.plugins.insert("NodeResourcesFit");
  }
  return e;
}

}  // namespace

Scheduler::Scheduler(client::ApiClient* client, client::EventRecorder* events,
                     std::vector<framework::Profile> profiles, SchedulerOptions options)
    : client_(client),
      events_(events),
      profiles_(std::move(profiles)),
      options_(options),
      queue_(options.queue, options.clock),
      rng_(options.seed) {
  for (int i = 0; i < options_.bind_workers; ++i) binders_.emplace_back([this] { BindLoop(); });
}

Scheduler::~Scheduler() {
  Stop();
  {
    absl::MutexLock lock(&bind_mu_);
    stopping_ = true;
  }
  for (auto& t : binders_) t.join();
  WaitForBindings();  // bindings still waiting for the apiserver's answer call back into this
}

const framework::Profile* Scheduler::ProfileFor(const api::Pod& pod) const {
  const std::string& name =
      pod.spec().scheduler_name().empty() ? "default-scheduler" : pod.spec().scheduler_name();
  for (const auto& p : profiles_) {
    if (p.scheduler_name == name) return &p;
  }
  return nullptr;
}

client::Informer<api::Pod>::Handlers Scheduler::PodHandlers() {
  return {
      .on_add = [this](const PodPtr& pod) { OnPodAdd(pod); },
      .on_update = [this](const PodPtr& old_pod, const PodPtr& pod) { OnPodUpdate(old_pod, pod); },
      .on_delete = [this](const PodPtr& pod) { OnPodDelete(pod); },
  };
}

client::Informer<api::Node>::Handlers Scheduler::NodeHandlers() {
  using NodePtr = std::shared_ptr<const api::Node>;
  return {
      .on_add =
          [this](const NodePtr& node) {
            cache_.AddNode(node);
            queue_.OnEvent({"NodeAdd", {}});
          },
      .on_update = [this](const NodePtr& old_node,
                          const NodePtr& node) { OnNodeUpdate(old_node, node); },
      .on_delete = [this](const NodePtr& node) { cache_.RemoveNode(node->metadata().name()); },
  };
}

void Scheduler::OnNodeUpdate(const std::shared_ptr<const api::Node>& old_node,
                             const std::shared_ptr<const api::Node>& node) {
  cache_.UpdateNode(node);
  const ClusterEvent e = NodeChange(*old_node, *node);
  if (!e.plugins.empty()) queue_.OnEvent(e);
}

void Scheduler::OnPodAdd(const PodPtr& pod) {
  if (Bound(*pod)) {
    cache_.AddPod(pod);
    queue_.OnEvent({"AssignedPodAdd", {"InterPodAffinity", "PodTopologySpread"}});
  } else if (Responsible(*pod) && !Terminating(*pod)) {
    queue_.Add(pod);
  }
}

void Scheduler::OnPodUpdate(const PodPtr& old_pod, const PodPtr& pod) {
  if (Bound(*pod)) {
    if (!Bound(*old_pod)) queue_.Delete(PodKey(*pod));
    cache_.UpdatePod(pod);
    if (!api::SameMap(old_pod->metadata().labels(), pod->metadata().labels())) {
      queue_.OnEvent({"AssignedPodUpdate", {"InterPodAffinity", "PodTopologySpread"}});
    }
    if (Ended(*pod) && !Ended(*old_pod)) {
      // What it held on its node is free now.
      queue_.OnEvent({"AssignedPodEnded",
                      {"NodeResourcesFit", "NodePorts", "InterPodAffinity", "PodTopologySpread",
                       "VolumeRestrictions"}});
    }
    return;
  }
  if (Terminating(*pod) || !Responsible(*pod)) {
    queue_.Delete(PodKey(*pod));
  } else {
    queue_.Update(pod);
  }
}

void Scheduler::OnPodDelete(const PodPtr& pod) {
  if (Bound(*pod) || cache_.IsAssumed(PodKey(*pod))) {
    cache_.RemovePod(*pod);
    queue_.OnEvent({"AssignedPodDelete",
                    {"NodeResourcesFit", "NodePorts", "InterPodAffinity", "PodTopologySpread",
                     "VolumeRestrictions"}});
  }
  queue_.Delete(PodKey(*pod));
}

std::vector<api::LabelSelector> Scheduler::OwnerSelectors(const api::Pod& pod) const {
  if (!replica_sets_) return {};
  return framework::ReplicaSetSelectorsOf(pod, replica_sets_->List());
}

framework::LabelMap Scheduler::NamespaceLabels(const std::string& name) const {
  if (!namespaces_) return {};
  auto ns = namespaces_->Get(name);
  return ns ? ns->metadata().labels() : framework::LabelMap();
}

std::vector<std::string> Scheduler::NamespacesMatching(const api::Selector& selector) const {
  if (!namespaces_) return {};
  return framework::NamespacesSelected(selector, namespaces_->List());
}

void Scheduler::Run() {
  while (ScheduleOne()) {
  }
}

void Scheduler::Stop() { queue_.Close(); }

bool Scheduler::ScheduleOne() {
  std::optional<QueuedPod> popped = queue_.Pop();
  if (!popped) return false;
  QueuedPod qp = std::move(*popped);
  const uint64_t cycle = queue_.cycle();
  const PodPtr pod = qp.pod;
  const std::string key = PodKey(*pod);
  const framework::Profile* profile = ProfileFor(*pod);
  if (!profile || Bound(*pod) || Terminating(*pod) || cache_.IsAssumed(key)) {
    queue_.Done(key);
    return true;
  }
  ++attempts_;
  cache_.UpdateSnapshot(&snapshot_);
  const auto explain = pod->metadata().annotations().find(kExplainAnnotation);
  const bool explaining =
      explain != pod->metadata().annotations().end() && explain->second == "true";
  framework::ScheduleResult result = framework::Schedule(
      *profile, *pod, snapshot_, {.explain = explaining, .start_index = next_start_index_}, rng_);
  next_start_index_ = result.next_start_index;
  if (explaining) Explain(*pod, result, snapshot_.nodes().size());
  if (!result.status.ok()) {
    Failed(std::move(qp), result, cycle);
    return true;
  }
  auto assumed = std::make_shared<api::Pod>(*pod);
  assumed->mutable_spec()->set_node_name(result.node);
  if (auto st = cache_.AssumePod(assumed); !st.ok()) {
    Log().error("{}: cannot assume it on {}: {}", key, result.node, st.ToString());
    queue_.AddBackoff(std::move(qp));
    return true;
  }
  StartBind(std::move(qp), result.node);
  return true;
}

void Scheduler::Failed(QueuedPod qp, const framework::ScheduleResult& result, uint64_t cycle) {
  const api::Pod& pod = *qp.pod;
  const std::string message = result.status.reasons().empty()
                                  ? "scheduling failed"
                                  : absl::StrJoin(result.status.reasons(), ", ");
  if (events_) events_->Record(pod, "Warning", "FailedScheduling", message);
  Log().debug("{}: unschedulable: {}", PodKey(pod), message);
  CountAttempt(pod, result.status.code() == framework::Code::kError ? "error" : "unschedulable");
  if (result.status.code() == framework::Code::kError) {
    queue_.AddBackoff(std::move(qp));
    return;
  }
  qp.rejected_by.clear();
  if (!result.diagnosis.pre_filter.ok())
    qp.rejected_by.insert(std::string(result.diagnosis.pre_filter.plugin()));
  for (const auto& [node, st] : result.diagnosis.rejected) {
    qp.rejected_by.emplace(st.plugin());
  }
  const PodPtr latest = qp.pod;
  queue_.AddUnschedulable(std::move(qp), cycle);
  Submit([this, latest, message] { SetUnschedulableCondition(*latest, message); });
}

void Scheduler::SetUnschedulableCondition(const api::Pod& pod, const std::string& message) {
  for (const auto& c : pod.status().conditions()) {
    if (c.type() == "PodScheduled" && c.status() == "False" && c.reason() == "Unschedulable" &&
        c.message() == message) {
      return;  // already says so
    }
  }
  nlohmann::json conditions = nlohmann::json::array();
  for (const auto& c : pod.status().conditions()) {
    if (c.type() == "PodScheduled") continue;
    conditions.push_back({{"type", c.type()},
                          {"status", c.status()},
                          {"lastTransitionTime", c.last_transition_time()},
                          {"reason", c.reason()},
                          {"message", c.message()}});
  }
  conditions.push_back({{"type", "PodScheduled"},
                        {"status", "False"},
                        {"lastTransitionTime", api::NowRfc3339()},
                        {"reason", "Unschedulable"},
                        {"message", message}});
  const nlohmann::json patch = {{"status", {{"conditions", conditions}}}};
  auto st = client_->Patch<api::Pod>("pods", pod.metadata().namespace_(), pod.metadata().name(),
                                     patch.dump(), "status");
  if (!st.ok() && st.status().code() != absl::StatusCode::kNotFound) {
    Log().warn("{}: cannot set PodScheduled=False: {}", PodKey(pod), st.status().ToString());
  }
}

void Scheduler::StartBind(QueuedPod qp, std::string node) {
  {
    absl::MutexLock lock(&bind_mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(bind_mu_) {
      return stopping_ || binds_in_flight_ < options_.max_binds_in_flight;
    };
    bind_mu_.Await(absl::Condition(&room));
    ++binds_in_flight_;
  }
  const api::Pod& pod = *qp.pod;
  api::Binding binding;
  binding.mutable_metadata()->set_name(pod.metadata().name());
  binding.mutable_metadata()->set_namespace_(pod.metadata().namespace_());
  binding.mutable_metadata()->set_uid(pod.metadata().uid());
  binding.mutable_target()->set_kind("Node");
  binding.mutable_target()->set_name(node);
  apiserver::CreateRequest req;
  req.set_resource("pods");
  req.set_namespace_(pod.metadata().namespace_());
  req.set_name(pod.metadata().name());
  req.set_subresource("binding");
  req.set_object(binding.SerializeAsString());
  // No thread waits for the apiserver: the answer finishes the binding where it arrives.
  client_->CreateRawAsync(req, [this, qp = std::move(qp), node = std::move(node)](auto bound) {
    BindingAnswered(qp, node, bound.status());
    absl::MutexLock lock(&bind_mu_);
    --binds_in_flight_;
  });
}

void Scheduler::BindingAnswered(const QueuedPod& qp, const std::string& node,
                                const absl::Status& bound) {
  const api::Pod& pod = *qp.pod;
  const std::string key = PodKey(pod);
  if (!bound.ok()) {
    Log().warn("{}: binding to {} failed: {}", key, node, bound.ToString());
    cache_.ForgetPod(key);
    if (events_) {
      events_->Record(pod, "Warning", "FailedScheduling",
                      fmt::format("Binding rejected: {}", std::string(bound.message())));
    }
    if (bound.code() == absl::StatusCode::kNotFound) {
      queue_.Delete(key);
    } else {
      queue_.AddBackoff(qp);
    }
    return;
  }
  ++scheduled_;
  CountAttempt(pod, "scheduled");
  queue_.Done(key);
  if (events_) {
    events_->Record(pod, "Normal", "Scheduled",
                    fmt::format("Successfully assigned {}/{} to {}", pod.metadata().namespace_(),
                                pod.metadata().name(), node));
  }
}

void Scheduler::Explain(const api::Pod& pod, const framework::ScheduleResult& result,
                        size_t num_nodes) {
  if (!events_) return;
  events_->Record(pod, "Normal", kExplainedReason, framework::ExplainText(result, num_nodes));
}

void Scheduler::Submit(std::function<void()> task) {
  absl::MutexLock lock(&bind_mu_);
  auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(bind_mu_) {
    return stopping_ || binds_in_flight_ < options_.max_binds_in_flight;
  };
  bind_mu_.Await(absl::Condition(&room));
  ++binds_in_flight_;
  bind_tasks_.push_back(std::move(task));
}

void Scheduler::BindLoop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&bind_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(bind_mu_) {
        return stopping_ || !bind_tasks_.empty();
      };
      bind_mu_.Await(absl::Condition(&ready));
      if (bind_tasks_.empty()) return;  // stopping, nothing left
      task = std::move(bind_tasks_.front());
      bind_tasks_.pop_front();
    }
    task();
    absl::MutexLock lock(&bind_mu_);
    --binds_in_flight_;
  }
}

void Scheduler::WaitForBindings() {
  absl::MutexLock lock(&bind_mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(bind_mu_) { return binds_in_flight_ == 0; };
  bind_mu_.Await(absl::Condition(&idle));
}

}  // namespace mkube::scheduler
