#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "proto/api/core.pb.h"
#include "scheduler/framework/cycle_state.h"
#include "scheduler/framework/node_info.h"
#include "scheduler/framework/snapshot.h"
#include "scheduler/framework/status.h"

// The extension points a plugin may implement, as kube-scheduler's framework has them; each
// plugin implements only those it needs.
namespace mkube::scheduler::framework {

// Scores are 0..kMaxNodeScore after normalisation, before the plugin's weight.
inline constexpr int64_t kMaxNodeScore = 100;

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
};
using PluginPtr = std::unique_ptr<Plugin>;

// Once per pod and cycle, before any node is looked at: computes what Filter needs (kept in
// the cycle state), or rejects the pod outright. Status::Skip() says the plugin has nothing
// to check of this pod: its Filter is not called in this cycle (and, called without its
// PreFilter's state, must pass every node such a pod could be placed on).
class PreFilterPlugin : public virtual Plugin {
 public:
  virtual Status PreFilter(CycleState& state, const api::Pod& pod,
                           const Snapshot& snapshot) const = 0;
};

// Whether the pod may run on the node (a predicate).
class FilterPlugin : public virtual Plugin {
 public:
  virtual Status Filter(const CycleState& state, const api::Pod& pod,
                        const NodeInfo& node) const = 0;
};

// Once per pod and cycle, with the nodes that passed the filters: computes what Score needs.
// Status::Skip() says the plugin has nothing to say of this pod (its Score is not called).
class PreScorePlugin : public virtual Plugin {
 public:
  virtual Status PreScore(CycleState& state, const api::Pod& pod,
                          const std::vector<const NodeInfo*>& nodes,
                          const Snapshot& snapshot) const = 0;
};

// How much the plugin likes the node for the pod (a priority); higher is better.
class ScorePlugin : public virtual Plugin {
 public:
  virtual int64_t Score(const CycleState& state, const api::Pod& pod,
                        const NodeInfo& node) const = 0;
  // Brings the scores of all nodes into 0..kMaxNodeScore (scores[i] is nodes[i]'s); plugins
  // whose Score is already in that range leave it alone.
  virtual void NormalizeScore(const CycleState& state, const api::Pod& pod,
                              std::vector<int64_t>& scores) const {}
};

// Scales scores so that the highest is kMaxNodeScore (all 0 stay 0); `reverse` then turns
// them around, for plugins whose raw score counts something bad (all 0 become the maximum).
inline void DefaultNormalizeScore(bool reverse, std::vector<int64_t>& scores) {
  int64_t max = 0;
  for (int64_t s : scores) max = std::max(max, s);
  for (int64_t& s : scores) {
    if (max > 0) s = kMaxNodeScore * s / max;
    if (reverse) s = kMaxNodeScore - s;
  }
}

}  // namespace mkube::scheduler::framework
