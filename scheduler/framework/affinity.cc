#include "scheduler/framework/affinity.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::scheduler::framework {
namespace {

std::string Canonical(const AffinityTerm& t) {
  return fmt::format(
      "{}|{}|{}|{}", absl::StrJoin(t.namespaces, ","),
      t.namespace_selector ? "{" + t.namespace_selector->String() + "}" : "-",
      t.namespaces.empty() && !t.namespace_selector ? "nothing" : t.selector.String(),
      t.topology_key);
}

absl::StatusOr<AffinityTerm> ParseTerm(const api::PodAffinityTerm& t, const api::Pod& owner,
                                       int32_t weight) {
  AffinityTerm term;
  MKUBE_ASSIGN_OR_RETURN(auto selector, api::Selector::FromLabelSelector(t.label_selector()));
  term.topology_key = t.topology_key();
  term.weight = weight;
  // A term without a label selector selects no pod (no namespace is in it); an empty one
  // selects every pod.
  if (!t.has_label_selector()) return term;
  term.selector = std::move(selector);
  term.namespaces.assign(t.namespaces().begin(), t.namespaces().end());
  if (t.has_namespace_selector()) {
    MKUBE_ASSIGN_OR_RETURN(auto ns, api::Selector::FromLabelSelector(t.namespace_selector()));
    term.namespace_selector = std::move(ns);
  } else if (term.namespaces.empty()) {
    term.namespaces.push_back(owner.metadata().namespace_());
  }
  return term;
}

absl::Status ParseList(const api::PodAffinity& a, const api::Pod& owner, const char* what,
                       std::vector<AffinityTerm>* required, std::vector<AffinityTerm>* preferred) {
  for (int i = 0; i < a.required_during_scheduling_ignored_during_execution_size(); ++i) {
    auto t = ParseTerm(a.required_during_scheduling_ignored_during_execution(i), owner, 0);
    if (!t.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}.requiredDuringSchedulingIgnoredDuringExecution[{}]: {}", what, i,
                      std::string(t.status().message())));
    }
    t->canonical = Canonical(*t);
    required->push_back(std::move(*t));
  }
  for (int i = 0; i < a.preferred_during_scheduling_ignored_during_execution_size(); ++i) {
    const auto& w = a.preferred_during_scheduling_ignored_during_execution(i);
    if (w.weight() == 0) continue;
    auto t = ParseTerm(w.pod_affinity_term(), owner, w.weight());
    if (!t.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}.preferredDuringSchedulingIgnoredDuringExecution[{}]: {}", what, i,
                      std::string(t.status().message())));
    }
    t->canonical = Canonical(*t);
    preferred->push_back(std::move(*t));
  }
  return absl::OkStatus();
}

}  // namespace

bool AffinityTerm::Matches(const api::Pod& pod, const LabelMap& namespace_labels) const {
  const std::string& ns = pod.metadata().namespace_();
  const bool in_namespace =
      std::find(namespaces.begin(), namespaces.end(), ns) != namespaces.end() ||
      (namespace_selector && namespace_selector->Matches(namespace_labels));
  return in_namespace && selector.Matches(pod.metadata().labels());
}

absl::StatusOr<AffinityTerms> ParseAffinityTerms(const api::Pod& pod) {
  AffinityTerms terms;
  const auto& a = pod.spec().affinity();
  if (auto st = ParseList(a.pod_affinity(), pod, "podAffinity", &terms.required_affinity,
                          &terms.preferred_affinity);
      !st.ok()) {
    return st;
  }
  if (auto st = ParseList(a.pod_anti_affinity(), pod, "podAntiAffinity",
                          &terms.required_anti_affinity, &terms.preferred_anti_affinity);
      !st.ok()) {
    return st;
  }
  return terms;
}

}  // namespace mkube::scheduler::framework
