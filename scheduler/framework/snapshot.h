#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
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

// The live pods (not being deleted) of every label group, summed over the nodes of one topology
// domain: what spreading counts by zone, without visiting each node of the zone.
struct DomainGroup {
  PodPtr sample;  // one pod of the group, for its namespace and labels
  int64_t live = 0;
};
using DomainGroups = absl::flat_hash_map<uint64_t, DomainGroup>;
struct Domain {
  int64_t nodes = 0;  // nodes with this value (a domain with none is gone)
  DomainGroups groups;
};
struct Domains {
  absl::flat_hash_map<std::string, Domain> by_value;  // by the nodes' value of the key
  Domain missing;  // nodes without the key
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

  // Label groups by the nodes' values of a topology key. The first call for a key adds its
  // nodes up; from then on Replace keeps the sums in step, one changed node at a time. Called
  // from a cycle's PreFilter and PreScore, which run on the scheduling thread only.
  const Domains& DomainsOf(const std::string& key) const {
    auto [it, added] = domains_.try_emplace(key);
    if (added) {
      for (const auto& n : nodes_) AddDomains(key, *n, +1, &it->second);
    }
    return it->second;
  }

  // A new set of nodes.
  void Reset(std::vector<NodeInfoPtr> nodes) {
    nodes_ = std::move(nodes);
    index_.clear();
    image_nodes_.clear();
    domains_.clear();
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
    for (auto& [key, domains] : domains_) {
      AddDomains(key, *slot, -1, &domains);
      AddDomains(key, *info, +1, &domains);
    }
    slot = std::move(info);
    return true;
  }

 private:
  static void AddDomains(const std::string& key, const NodeInfo& node, int sign, Domains* out) {
    const auto& labels = node.node().metadata().labels();
    auto value = labels.find(key);
    Domain& domain = value == labels.end() ? out->missing : out->by_value[value->second];
    domain.nodes += sign;
    for (const auto& g : node.label_groups()) {
      const int64_t live = g.count - g.terminating;
      if (live == 0) continue;
      auto it = domain.groups.try_emplace(g.id, DomainGroup{g.sample, 0}).first;
      if ((it->second.live += sign * live) == 0) domain.groups.erase(it);
    }
    if (domain.nodes == 0 && value != labels.end()) out->by_value.erase(value->second);
  }
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
  mutable absl::flat_hash_map<std::string, Domains> domains_;  // by topology key
};

}  // namespace mkube::scheduler::framework
