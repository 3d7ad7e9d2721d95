#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/api/core.pb.h"
#include "scheduler/framework/affinity.h"
#include "scheduler/framework/resources.h"

namespace mkube::scheduler::framework {

using PodPtr = std::shared_ptr<const api::Pod>;
using NodePtr = std::shared_ptr<const api::Node>;

// A hostPort a pod holds on its node: (hostIP, protocol, port); hostIP 0.0.0.0 for all.
struct HostPort {
  std::string ip, protocol;
  int32_t port = 0;
  bool operator==(const HostPort&) const = default;
};
std::vector<HostPort> HostPortsOf(const api::Pod& pod);
// Whether two hostPorts cannot be held at once (same port and protocol, overlapping IPs).
bool PortsConflict(const HostPort& a, const HostPort& b);

// "namespace/name" of a pod.
std::string PodKey(const api::Pod& pod);

// A node as one scheduling cycle sees it: the Node, the pods on it (bound, or assumed on it
// by this scheduler) and what they hold together, computed as pods come and go so that a
// filter never adds them up again. The scheduler's cache makes them; a snapshot shares them
// (immutable there).
class NodeInfo {
 public:
  explicit NodeInfo(NodePtr node) { SetNode(std::move(node)); }

  void SetNode(NodePtr node);
  // Pods that have ended (Succeeded, Failed) hold nothing on their node, as in Kubernetes.
  void AddPod(PodPtr pod);
  // By "namespace/name"; false when the pod is not on this node.
  bool RemovePod(const std::string& key);

  const api::Node& node() const { return *node_; }
  const NodePtr& node_ptr() const { return node_; }
  const std::string& name() const { return node_->metadata().name(); }
  const std::vector<PodPtr>& pods() const { return pods_; }
  // Pods with any pod (anti-)affinity, and those with required anti-affinity: the ones whose
  // terms other pods must respect.
  const std::vector<AffinityPodPtr>& pods_with_affinity() const { return pods_with_affinity_; }
  const std::vector<AffinityPodPtr>& pods_with_required_anti_affinity() const {
    return pods_with_required_anti_affinity_;
  }
  const ResourceList& allocatable() const { return allocatable_; }
  // The sum of the pods' requests.
  const ResourceList& requested() const { return requested_; }
  // The same with 100m cpu and 200Mi memory for containers that request none: what the
  // least-allocated score counts, so that pods without requests still spread.
  int64_t non_zero_cpu() const { return non_zero_cpu_; }
  int64_t non_zero_memory() const { return non_zero_memory_; }
  const std::vector<HostPort>& used_ports() const { return used_ports_; }
  // Image sizes by every name the node reports them under.
  const std::map<std::string, int64_t>& images() const { return images_; }

 private:
  void Account(const api::Pod& pod, int sign);

  NodePtr node_;
  std::vector<PodPtr> pods_;
  std::vector<AffinityPodPtr> pods_with_affinity_;
  std::vector<AffinityPodPtr> pods_with_required_anti_affinity_;
  ResourceList allocatable_;
  ResourceList requested_;
  int64_t non_zero_cpu_ = 0;
  int64_t non_zero_memory_ = 0;
  std::vector<HostPort> used_ports_;
  std::map<std::string, int64_t> images_;
};
using NodeInfoPtr = std::shared_ptr<const NodeInfo>;

}  // namespace mkube::scheduler::framework
