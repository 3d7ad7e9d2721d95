#pragma once

#include <memory>
#include <string_view>

#include "proto/api/core.pb.h"
#include "scheduler/framework/cycle_state.h"
#include "scheduler/framework/node_info.h"
#include "scheduler/framework/status.h"

// The extension points a plugin may implement, as kube-scheduler's framework has them; each
// plugin implements only those it needs.
namespace mkube::scheduler::framework {

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
};
using PluginPtr = std::unique_ptr<Plugin>;

// Once per pod and cycle, before any node is looked at: computes what Filter needs (kept in
// the cycle state), or rejects the pod outright.
class PreFilterPlugin : public virtual Plugin {
 public:
  virtual Status PreFilter(CycleState& state, const api::Pod& pod) const = 0;
};

// Whether the pod may run on the node (a predicate).
class FilterPlugin : public virtual Plugin {
 public:
  virtual Status Filter(const CycleState& state, const api::Pod& pod,
                        const NodeInfo& node) const = 0;
};

}  // namespace mkube::scheduler::framework
