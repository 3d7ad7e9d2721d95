#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/framework/node_info.h"

namespace mkube::scheduler::framework {

// The cluster as one scheduling cycle sees it: every node with its pods, frozen for the
// cycle. The cache updates it between cycles, copying only the nodes that changed.
class Snapshot {
 public:
  Snapshot() = default;
  explicit Snapshot(std::vector<NodeInfoPtr> nodes) { Reset(std::move(nodes)); }

  // In the order nodes are tried.
  const std::vector<NodeInfoPtr>& nodes() const { return nodes_; }
  const NodeInfo* Get(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : nodes_[it->second].get();
  }
  // The nodes with pods that have pod (anti-)affinity terms, and required anti-affinity.
  const std::vector<NodeInfoPtr>& have_pods_with_affinity() const { return with_affinity_; }
  const std::vector<NodeInfoPtr>& have_pods_with_required_anti_affinity() const {
    return with_anti_affinity_;
  }

  // On how many nodes an image is (by the names nodes report it under).
  int NodesWithImage(const std::string& name) const {
    auto it = image_nodes_.find(name);
    return it == image_nodes_.end() ? 0 : it->second;
  }

  // A new set of nodes.
  void Reset(std::vector<NodeInfoPtr> nodes) {
    nodes_ = std::move(nodes);
    index_.clear();
    image_nodes_.clear();
    for (size_t i = 0; i < nodes_.size(); ++i) {
      index_[nodes_[i]->name()] = i;
      CountImages(*nodes_[i], +1);
    }
    Reindex();
  }
  // A node that is already in the snapshot, changed; false when it is not in it.
  bool Replace(NodeInfoPtr info) {
    auto it = index_.find(info->name());
    if (it == index_.end()) return false;
    NodeInfoPtr& slot = nodes_[it->second];
    const bool affinity_changed =
        !slot->pods_with_affinity().empty() || !info->pods_with_affinity().empty();
    if (slot->images() != info->images()) {
      CountImages(*slot, -1);
      CountImages(*info, +1);
    }
    slot = std::move(info);
    if (affinity_changed) Reindex();
    return true;
  }

 private:
  void CountImages(const NodeInfo& node, int sign) {
    for (const auto& [name, size] : node.images()) {
      if ((image_nodes_[name] += sign) == 0) image_nodes_.erase(name);
    }
  }
  void Reindex() {
    with_affinity_.clear();
    with_anti_affinity_.clear();
    for (const auto& n : nodes_) {
      if (!n->pods_with_affinity().empty()) with_affinity_.push_back(n);
      if (!n->pods_with_required_anti_affinity().empty()) with_anti_affinity_.push_back(n);
    }
  }

  std::vector<NodeInfoPtr> nodes_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<NodeInfoPtr> with_affinity_;
  std::vector<NodeInfoPtr> with_anti_affinity_;
  std::unordered_map<std::string, int> image_nodes_;
};

}  // namespace mkube::scheduler::framework
