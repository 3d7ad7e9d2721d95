#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proto/api/core.pb.h"
#include "scheduler/framework/resources.h"

namespace mkube::scheduler::framework {

using PodPtr = std::shared_ptr<const api::Pod>;
using NodePtr = std::shared_ptr<const api::Node>;

// A node as one scheduling cycle sees it: the Node, the pods on it (bound, or assumed on it
// by this scheduler) and what they request together. Filters and scores read it; the
// scheduler's cache makes it.
struct NodeInfo {
  NodePtr node;
  std::vector<PodPtr> pods;
  ResourceList requested;  // the sum of the pods' requests

  const std::string& name() const { return node->metadata().name(); }
  // Pods that have ended (Succeeded, Failed) hold nothing on their node, as in Kubernetes.
  void AddPod(PodPtr pod) {
    const std::string& phase = pod->status().phase();
    if (phase == "Succeeded" || phase == "Failed") return;
    for (const auto& [name, milli] : PodRequests(*pod)) requested[name] += milli;
    pods.push_back(std::move(pod));
  }
};

}  // namespace mkube::scheduler::framework
