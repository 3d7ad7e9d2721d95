#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/framework/snapshot.h"

namespace mkube::scheduler {

// The scheduler's view of the cluster between cycles, as kube-scheduler's cache: nodes and
// the pods bound to them (from the informers), and pods this scheduler has assumed on a node
// while their binding is on its way, so that the next pod already sees them there. An
// assumed pod stays until the informer shows it bound (confirmed) or the binding fails
// (forgotten).
class Cache {
 public:
  void AddNode(framework::NodePtr node) ABSL_LOCKS_EXCLUDED(mu_);
  void UpdateNode(framework::NodePtr node) ABSL_LOCKS_EXCLUDED(mu_) { AddNode(std::move(node)); }
  void RemoveNode(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);

  // A pod the informer shows bound to a node (spec.nodeName set); confirms an assumed one.
  void AddPod(framework::PodPtr pod) ABSL_LOCKS_EXCLUDED(mu_);
  void UpdatePod(framework::PodPtr pod) ABSL_LOCKS_EXCLUDED(mu_) { AddPod(std::move(pod)); }
  void RemovePod(const api::Pod& pod) ABSL_LOCKS_EXCLUDED(mu_);

  // The pod (its spec.nodeName set to the chosen node) is on that node from now on.
  absl::Status AssumePod(framework::PodPtr pod) ABSL_LOCKS_EXCLUDED(mu_);
  // Its binding failed: the node is free of it again.
  void ForgetPod(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  bool IsAssumed(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);

  // Brings `snapshot` up to date, copying only the nodes that changed since the last call.
  void UpdateSnapshot(framework::Snapshot* snapshot) ABSL_LOCKS_EXCLUDED(mu_);

  size_t NodeCount() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t PodCount() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct PodState {
    framework::PodPtr pod;
    bool assumed = false;
  };
  void AddToNode(const framework::PodPtr& pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveFromNode(const api::Pod& pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Dirty(const std::string& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, framework::NodeInfo> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, PodState> pods_ ABSL_GUARDED_BY(mu_);  // by namespace/name
  // Pods bound to nodes the cache does not know (yet): they join the node when it comes.
  std::map<std::string, std::set<std::string>> waiting_for_node_ ABSL_GUARDED_BY(mu_);
  // What the last snapshot was given of each node, and what changed since.
  std::map<std::string, framework::NodeInfoPtr> published_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  bool node_set_changed_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace mkube::scheduler
