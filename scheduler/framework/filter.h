#pragma once

#include <map>
#include <string>
#include <vector>

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::framework {

// The filters of a profile, in the order they run.
struct FilterChain {
  std::vector<const PreFilterPlugin*> pre_filters;
  std::vector<const FilterPlugin*> filters;
};

// Where a pod may go, and why not elsewhere.
struct Diagnosis {
  std::vector<const NodeInfo*> feasible;
  // By node, in the order they were filtered: the first filter that said no.
  std::vector<std::pair<std::string, Status>> rejected;
  // The node's rejection, or null.
  const Status* RejectionOf(std::string_view node) const {
    for (const auto& [name, st] : rejected) {
      if (name == node) return &st;
    }
    return nullptr;
  }
  Status pre_filter;  // not ok when a PreFilter rejected the pod itself
};

// Runs the PreFilters once.
Status RunPreFilters(const FilterChain& chain, CycleState& state, const api::Pod& pod,
                     const Snapshot& snapshot);
// Whether the pod passes every filter on the node: the first rejection (or error) is the
// node's status, as kube-scheduler's RunFilterPlugins stops there.
Status RunFilterPlugins(const FilterChain& chain, const CycleState& state, const api::Pod& pod,
                        const NodeInfo& node);

// PreFilters, then every node of the snapshot through the filters.
Diagnosis RunFilters(const FilterChain& chain, CycleState& state, const api::Pod& pod,
                     const Snapshot& snapshot);

// The FailedScheduling message in kube-scheduler's words: "0/3 nodes are available: 1 node(s)
// had untolerated taint {node-role.kubernetes.io/master: }, 2 node(s) didn't match Pod's node
// affinity/selector." Reasons are counted over the nodes and sorted as kube-scheduler sorts
// them (as strings).
std::string FitErrorMessage(size_t num_nodes, const Diagnosis& diagnosis);

}  // namespace mkube::scheduler::framework
