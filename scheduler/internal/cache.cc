#include "scheduler/internal/cache.h"

#include "fmt/format.h"

namespace mkube::scheduler {

using framework::PodKey;

void Cache::Dirty(const std::string& node) {
  if (nodes_.contains(node)) dirty_.insert(node);
}

void Cache::AddNode(framework::NodePtr node) {
  absl::MutexLock lock(&mu_);
  const std::string name = node->metadata().name();
  auto it = nodes_.find(name);
  if (it != nodes_.end()) {
    it->second.SetNode(std::move(node));
    Dirty(name);
    return;
  }
  it = nodes_.emplace(name, framework::NodeInfo(std::move(node))).first;
  node_set_changed_ = true;
  dirty_.insert(name);
  if (auto w = waiting_for_node_.find(name); w != waiting_for_node_.end()) {
    for (const auto& key : w->second) {
      if (auto p = pods_.find(key); p != pods_.end()) it->second.AddPod(p->second.pod);
    }
    waiting_for_node_.erase(w);
  }
}

void Cache::RemoveNode(const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  // Its pods stay known: should the node come back, they are on it again.
  for (const auto& pod : it->second.pods()) waiting_for_node_[name].insert(PodKey(*pod));
  nodes_.erase(it);
  dirty_.erase(name);
  published_.erase(name);
  node_set_changed_ = true;
}

void Cache::AddToNode(const framework::PodPtr& pod) {
  const std::string& node = pod->spec().node_name();
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    waiting_for_node_[node].insert(PodKey(*pod));
    return;
  }
  it->second.AddPod(pod);
  dirty_.insert(node);
}

void Cache::RemoveFromNode(const api::Pod& pod) {
  const std::string& node = pod.spec().node_name();
  const std::string key = PodKey(pod);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    if (auto w = waiting_for_node_.find(node); w != waiting_for_node_.end()) {
      w->second.erase(key);
      if (w->second.empty()) waiting_for_node_.erase(w);
    }
    return;
  }
  if (it->second.RemovePod(key)) dirty_.insert(node);
}

void Cache::AddPod(framework::PodPtr pod) {
  absl::MutexLock lock(&mu_);
  const std::string key = PodKey(*pod);
  auto it = pods_.find(key);
  if (it != pods_.end()) {
    // Confirmed (if it was assumed), moved (if bound elsewhere) or just updated: the node
    // holds the latest object.
    RemoveFromNode(*it->second.pod);
    it->second = {pod, false};
  } else {
    pods_.emplace(key, PodState{pod, false});
  }
  AddToNode(pod);
}

void Cache::RemovePod(const api::Pod& pod) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(PodKey(pod));
  if (it == pods_.end()) return;
  RemoveFromNode(*it->second.pod);
  pods_.erase(it);
}

absl::Status Cache::AssumePod(framework::PodPtr pod) {
  absl::MutexLock lock(&mu_);
  const std::string key = PodKey(*pod);
  if (pods_.contains(key)) {
    return absl::AlreadyExistsError(fmt::format("pod {} is already in the cache", key));
  }
  pods_.emplace(key, PodState{pod, true});
  AddToNode(pod);
  return absl::OkStatus();
}

void Cache::ForgetPod(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  if (it == pods_.end() || !it->second.assumed) return;
  RemoveFromNode(*it->second.pod);
  pods_.erase(it);
}

bool Cache::IsAssumed(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(key);
  return it != pods_.end() && it->second.assumed;
}

void Cache::UpdateSnapshot(framework::Snapshot* snapshot) {
  absl::MutexLock lock(&mu_);
  for (const auto& name : dirty_) {
    published_[name] = std::make_shared<framework::NodeInfo>(nodes_.at(name));
  }
  if (node_set_changed_) {
    std::vector<framework::NodeInfoPtr> all;
    all.reserve(published_.size());
    for (const auto& [name, info] : published_) all.push_back(info);
    snapshot->Reset(std::move(all));
    node_set_changed_ = false;
  } else {
    for (const auto& name : dirty_) snapshot->Replace(published_.at(name));
  }
  dirty_.clear();
}

size_t Cache::NodeCount() const {
  absl::MutexLock lock(&mu_);
  return nodes_.size();
}

size_t Cache::PodCount() const {
  absl::MutexLock lock(&mu_);
  return pods_.size();
}

}  // namespace mkube::scheduler
