#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "api/labels.h"
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

// What NodeInfo::PodsWithLabel looks up: a namespace and one label.
std::string LabelIndexKey(std::string_view ns, std::string_view key, std::string_view value);
// The one label a selector asks for (key = value, or key in (value)), when that is all it
// asks: such selectors are counted from the index rather than pod by pod.
std::optional<std::pair<std::string, std::string>> SingleLabel(const api::Selector& selector);

// Pods with the same namespace and the same labels: a selector selects all of them or none.
// Each distinct (namespace, labels) has one id for the life of the process, so that a cycle
// decides a selector once per group however many nodes hold it.
struct LabelGroup {
  uint64_t id = 0;
  PodPtr sample;  // one of them, for its namespace and labels
  int64_t count = 0;
  int64_t terminating = 0;  // of count, those being deleted
};

// The well-known node labels topology spreading uses by default.
inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";
inline constexpr char kZoneLabel[] = "topology.kubernetes.io/zone";

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
  // The node's value of a label, or null; without a map lookup for the hostname and zone
  // labels, which topology spreading asks of every node in every cycle.
  const std::string* Label(const std::string& key) const;
  // spec.unschedulable, held here: the first filter asks it of every node it visits.
  bool unschedulable() const { return unschedulable_; }
  const std::vector<PodPtr>& pods() const { return pods_; }
  // Pods with any pod (anti-)affinity, and those with required anti-affinity: the ones whose
  // terms other pods must respect.
  const std::vector<AffinityPodPtr>& pods_with_affinity() const { return pods_with_affinity_; }
  const std::vector<AffinityPodPtr>& pods_with_required_anti_affinity() const {
    return pods_with_required_anti_affinity_;
  }
  // Their terms, each distinct (kind, term, weight) once (pods being deleted included, as
  // Kubernetes' InterPodAffinity counts them).
  const std::vector<TermCount>& affinity_terms() const { return affinity_terms_; }
  const ResourceList& allocatable() const { return allocatable_; }
  // The sum of the pods' requests.
  const ResourceList& requested() const { return requested_; }
  // One resource of either (0 when absent), without a map lookup for cpu, memory,
  // ephemeral-storage and pods: the filters and scores ask for them for every node.
  int64_t AllocatableOf(std::string_view name) const { return Of(allocatable_, alloc_fast_, name); }
  int64_t RequestedOf(std::string_view name) const { return Of(requested_, req_fast_, name); }
  // How many of its pods are in the namespace with the label, by LabelIndexKey; with
  // `terminating` false, not those being deleted.
  int64_t PodsWithLabel(const std::string& index_key, bool terminating) const {
    auto it = label_counts_.find(index_key);
    if (it == label_counts_.end()) return 0;
    if (terminating || terminating_label_counts_.empty()) return it->second;
    auto t = terminating_label_counts_.find(index_key);
    return it->second - (t == terminating_label_counts_.end() ? 0 : t->second);
  }
  // Its pods grouped by namespace and labels.
  const std::vector<LabelGroup>& label_groups() const { return label_groups_; }
  // Whether the node says how many pods it takes.
  bool limits_pods() const { return limits_pods_; }
  // The same with 100m cpu and 200Mi memory for containers that request none: what the
  // least-allocated score counts, so that pods without requests still spread.
  int64_t non_zero_cpu() const { return non_zero_cpu_; }
  int64_t non_zero_memory() const { return non_zero_memory_; }
  const std::vector<HostPort>& used_ports() const { return used_ports_; }
  // Image sizes by every name the node reports them under.
  const std::map<std::string, int64_t>& images() const { return images_; }

 private:
  // cpu, memory, ephemeral-storage, pods: their slot in the *_fast_ arrays, or -1.
  static int FastSlot(std::string_view name);
  static int64_t Of(const ResourceList& list, const std::array<int64_t, 4>& fast,
                    std::string_view name);
  static void Refresh(const ResourceList& list, std::array<int64_t, 4>& fast);
  void Account(const api::Pod& pod, int sign);
  void Group(const PodPtr& pod, int sign);
  void CountTerms(const AffinityTerms& terms, int sign);

  NodePtr node_;
  const std::string* hostname_ = nullptr;  // into node_'s labels
  const std::string* zone_ = nullptr;
  bool unschedulable_ = false;
  std::vector<PodPtr> pods_;
  std::vector<AffinityPodPtr> pods_with_affinity_;
  std::vector<AffinityPodPtr> pods_with_required_anti_affinity_;
  std::vector<TermCount> affinity_terms_;
  ResourceList allocatable_;
  ResourceList requested_;
  std::array<int64_t, 4> alloc_fast_{};
  std::array<int64_t, 4> req_fast_{};
  bool limits_pods_ = false;
  absl::flat_hash_map<std::string, int64_t> label_counts_;
  absl::flat_hash_map<std::string, int64_t> terminating_label_counts_;
  std::vector<LabelGroup> label_groups_;
  int64_t non_zero_cpu_ = 0;
  int64_t non_zero_memory_ = 0;
  std::vector<HostPort> used_ports_;
  std::map<std::string, int64_t> images_;
};
using NodeInfoPtr = std::shared_ptr<const NodeInfo>;

}  // namespace mkube::scheduler::framework
