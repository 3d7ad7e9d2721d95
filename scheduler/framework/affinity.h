#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/labels.h"
#include "proto/api/core.pb.h"

namespace mkube::scheduler::framework {

using LabelMap = google::protobuf::Map<std::string, std::string>;

// A pod (anti-)affinity term as it is matched against pods: the pods it selects by label, in
// the namespaces it names (its pod's own when it names none and has no namespace selector),
// or in the namespaces whose labels its namespace selector matches.
struct AffinityTerm {
  api::Selector selector;
  std::vector<std::string> namespaces;
  std::optional<api::Selector> namespace_selector;  // none: no namespace by labels
  std::string topology_key;
  int32_t weight = 0;  // preferred terms only
  // What the term selects, as text: two terms with the same one select the same pods, so
  // that a cycle asks once per distinct term whether it selects the pod being scheduled.
  std::string canonical;

  // Whether the term selects `pod`; `namespace_labels` are those of the pod's namespace.
  bool Matches(const api::Pod& pod, const LabelMap& namespace_labels) const;
};

// A pod's four lists of terms.
struct AffinityTerms {
  std::vector<AffinityTerm> required_affinity;
  std::vector<AffinityTerm> required_anti_affinity;
  std::vector<AffinityTerm> preferred_affinity;
  std::vector<AffinityTerm> preferred_anti_affinity;

  bool empty() const {
    return required_affinity.empty() && required_anti_affinity.empty() &&
           preferred_affinity.empty() && preferred_anti_affinity.empty();
  }
};

// The pod's terms; the error names the term that cannot be parsed (validation refuses such
// pods, so only a pod stored before it can have one).
absl::StatusOr<AffinityTerms> ParseAffinityTerms(const api::Pod& pod);

// The terms of a node's pods (those being deleted too), each distinct one once with how many pods
// carry it: what the pod being scheduled is checked against, per term rather than per pod.
struct TermCount {
  enum Kind {
    kRequiredAffinity,
    kRequiredAntiAffinity,
    kPreferredAffinity,
    kPreferredAntiAffinity
  };
  Kind kind;
  AffinityTerm term;
  int64_t count = 0;
};

// A pod on a node with its terms parsed once, when it was added, for every later pod to
// check against (existing pods' anti-affinity, their preferences for the incoming pod).
struct AffinityPod {
  std::shared_ptr<const api::Pod> pod;
  AffinityTerms terms;
};
using AffinityPodPtr = std::shared_ptr<const AffinityPod>;

}  // namespace mkube::scheduler::framework
