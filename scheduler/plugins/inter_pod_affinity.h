#pragma once

#include "scheduler/framework/config.h"
#include "scheduler/framework/interface.h"

namespace mkube::scheduler::plugins {

// Pod affinity and anti-affinity (MatchInterPodAffinity and InterPodAffinityPriority).
//
// Filter, on the required terms, over the node's value of each term's topologyKey (its
// "domain": the node itself for kubernetes.io/hostname, a zone, any label):
// - every podAffinity term needs a pod it selects in the node's domain; a node without the
//   key is never acceptable. A pod whose terms select no pod anywhere may still go where it
//   likes if it selects itself (the first of a group that wants to be together);
// - no podAntiAffinity term may select a pod in the node's domain;
// - no pod in the node's domain may have a podAntiAffinity term that selects this pod.
//
// Score, on the domains of the pods already placed: + weight for each preferred podAffinity
// term of the pod that selects a pod there, − weight for each preferred podAntiAffinity term;
// and the other way round, what the placed pods' terms say of this pod (their required
// affinity counts hard_pod_affinity_weight). Scaled so the best node has 100 and the worst 0.
class InterPodAffinity final : public framework::PreFilterPlugin,
                               public framework::FilterPlugin,
                               public framework::PreScorePlugin,
                               public framework::ScorePlugin {
 public:
  static constexpr char kName[] = "InterPodAffinity";
  static constexpr char kAffinityReason[] = "node(s) didn't match pod affinity rules";
  static constexpr char kAntiAffinityReason[] = "node(s) didn't match pod anti-affinity rules";
  static constexpr char kExistingReason[] =
      "node(s) didn't satisfy existing pods anti-affinity rules";

  struct Args {
    int32_t hard_pod_affinity_weight = 1;
    bool ignore_preferred_terms_of_existing_pods = false;
  };
  InterPodAffinity() = default;
  InterPodAffinity(Args args, const framework::Handle* handle) : args_(args), handle_(handle) {}

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

 private:
  // The terms of the incoming pod, with their namespace selectors turned into names.
  absl::StatusOr<framework::AffinityTerms> TermsOf(const api::Pod& pod) const;
  framework::LabelMap NamespaceLabels(const api::Pod& pod) const;

  Args args_;
  const framework::Handle* handle_ = nullptr;
};

}  // namespace mkube::scheduler::plugins
