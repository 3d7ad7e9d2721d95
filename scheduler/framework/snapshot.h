#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/framework/node_info.h"

namespace mkube::scheduler::framework {

// Some of a snapshot's nodes (those with pods with affinity, say), kept up to date one node
// at a time; in no particular order.
class NodeSubset {
 public:
  const std::vector<NodeInfoPtr>& nodes() const { return nodes_; }
  // Puts the node in (replacing the version there) or takes it out.
  void Set(const NodeInfoPtr& info, bool member) {
    auto it = pos_.find(info->name());
    if (member) {
      if (it != pos_.end()) {
        nodes_[it->second] = info;
      } else {
        pos_.emplace(info->name(), nodes_.size());
        nodes_.push_back(info);
      }
    } else if (it != pos_.end()) {
      const size_t at = it->second;
      pos_.erase(it);
      if (at + 1 != nodes_.size()) {
        nodes_[at] = std::move(nodes_.back());
        pos_[nodes_[at]->name()] = at;
      }
      nodes_.pop_back();
    }
  }
  void Clear() {
    nodes_.clear();
    pos_.clear();
  }

 private:
  std::vector<NodeInfoPtr> nodes_;
  std::unordered_map<std::string, size_t> pos_;
};

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
  const std::vector<NodeInfoPtr>& have_pods_with_affinity() const {
    return with_affinity_.nodes();
  }
  const std::vector<NodeInfoPtr>& have_pods_with_required_anti_affinity() const {
    return with_anti_affinity_.nodes();
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
    if (slot->images() != info->images()) {
      CountImages(*slot, -1);
      CountImages(*info, +1);
    }
    Index(info);
    slot = std::move(info);
    return true;
  }

 private:
  void CountImages(const NodeInfo& node, int sign) {
    for (const auto& [name, size] : node.images()) {
      if ((image_nodes_[name] += sign) == 0) image_nodes_.erase(name);
    }
  }
  void Index(const NodeInfoPtr& n) {
    with_affinity_.Set(n, !n->pods_with_affinity().empty());
    with_anti_affinity_.Set(n, !n->pods_with_required_anti_affinity().empty());
  }
  void Reindex() {
    with_affinity_.Clear();
    with_anti_affinity_.Clear();
    for (const auto& n : nodes_) Index(n);
  }

  std::vector<NodeInfoPtr> nodes_;
  std::unordered_map<std::string, size_t> index_;
  NodeSubset with_affinity_;
  NodeSubset with_anti_affinity_;
  std::unordered_map<std::string, int> image_nodes_;
};

}  // namespace mkube::scheduler::framework
