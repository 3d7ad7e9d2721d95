#pragma once

#include <vector>

#include "scheduler/framework/config.h"
#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// topologySpreadConstraints: the pods a constraint selects (in the pod's namespace) should
// spread over the values of its topologyKey, at most maxSkew more in one domain than in the
// emptiest. DoNotSchedule constraints filter: a node whose domain would exceed the skew, or
// that lacks the key, is rejected; fewer domains than minDomains count the emptiest as 0.
// ScheduleAnyway constraints score: fewer matching pods in the node's domain is better.
//
// Domains are counted over the nodes the pod could go to by its node affinity and selector
// (nodeAffinityPolicy Honor, the default) and, with nodeTaintsPolicy Honor, whose taints it
// tolerates. A pod without constraints gets the defaults: with defaultingType System (the
// default), spreading of the pods of its controllers over hostnames (maxSkew 3) and zones
// (maxSkew 5), ScheduleAnyway — the even spreading of a Deployment's pods over the nodes; a
// bare pod is not spread.
class PodTopologySpread final : public framework::PreFilterPlugin,
                                public framework::FilterPlugin,
                                public framework::PreScorePlugin,
                                public framework::ScorePlugin {
 public:
  static constexpr char kName[] = "PodTopologySpread";
  static constexpr char kReason[] = "node(s) didn't match pod topology spread constraints";
  static constexpr char kMissingLabelReason[] =
      "node(s) didn't match pod topology spread constraints (missing required label)";

  struct Args {
    bool system_defaulted = true;
    // With defaultingType List: for pods without their own.
    std::vector<api::TopologySpreadConstraint> default_constraints;
  };
  PodTopologySpread() = default;
  PodTopologySpread(Args args, const framework::Handle* handle)
      : args_(std::move(args)), handle_(handle) {}

  std::string_view Name() const override { return kName; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) const override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const std::vector<const framework::NodeInfo*>& nodes,
                             const framework::Snapshot& snapshot) const override;
  int64_t Score(const framework::CycleState& state, const api::Pod& pod,
                const framework::NodeInfo& node) const override;
  void NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                      std::vector<int64_t>& scores) const override;

  // A constraint as it is matched.
  struct Constraint {
    int32_t max_skew = 1;
    std::string topology_key;
    api::Selector selector;
    int32_t min_domains = 1;
    bool honor_node_affinity = true;
    bool honor_taints = false;
    // When the selector asks for one label: its NodeInfo::PodsWithLabel key in the pod's
    // namespace (counted without looking at each pod).
    std::string index_key;
    bool selects_nothing = false;        // no selector, or an empty one: counts no pod
    bool selects_self_if_empty = false;  // an empty selector still matches the pod itself
  };

 private:
  // The pod's constraints of one kind (hard: DoNotSchedule), or the defaults when it has
  // none; `defaulted` says the system defaults were used.
  absl::StatusOr<std::vector<Constraint>> ConstraintsOf(const api::Pod& pod, bool hard,
                                                        bool* defaulted) const;

  Args args_;
  const framework::Handle* handle_ = nullptr;
};

}  // namespace mkube::scheduler::plugins
