#include "scheduler/framework/filter.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace mkube::scheduler::framework {

Status RunPreFilters(const FilterChain& chain, CycleState& state, const api::Pod& pod,
                     const Snapshot& snapshot) {
  for (const PreFilterPlugin* p : chain.pre_filters) {
    Status st = p->PreFilter(state, pod, snapshot);
    if (st.skip()) {  // its Filter would pass every node: not called
      state.SkipFilter(static_cast<const Plugin*>(p));
      continue;
    }
    if (!st.ok()) return std::move(st.set_plugin(p->Name()));
  }
  return {};
}

Status RunFilterPlugins(const FilterChain& chain, const CycleState& state, const api::Pod& pod,
                        const NodeInfo& node) {
  for (const FilterPlugin* f : chain.filters) {
    if (state.SkipsFilter(static_cast<const Plugin*>(f))) continue;
    Status st = f->Filter(state, pod, node);
    if (!st.ok()) return std::move(st.set_plugin(f->Name()));
  }
  return {};
}

Diagnosis RunFilters(const FilterChain& chain, CycleState& state, const api::Pod& pod,
                     const Snapshot& snapshot) {
  Diagnosis d;
  d.pre_filter = RunPreFilters(chain, state, pod, snapshot);
  if (!d.pre_filter.ok()) return d;
  for (const NodeInfoPtr& node : snapshot.nodes()) {
    Status verdict = RunFilterPlugins(chain, state, pod, *node);
    if (verdict.ok()) {
      d.feasible.push_back(node.get());
    } else {
      d.rejected.emplace_back(node->name(), std::move(verdict));
    }
  }
  return d;
}

std::string FitErrorMessage(size_t num_nodes, const Diagnosis& diagnosis) {
  const std::string head = fmt::format("0/{} nodes are available", num_nodes);
  if (!diagnosis.pre_filter.ok()) {
    return fmt::format("{}: {}.", head, absl::StrJoin(diagnosis.pre_filter.reasons(), ", "));
  }
  std::map<std::string, int> counts;
  for (const auto& [node, status] : diagnosis.rejected) {
    for (const auto& reason : status.reasons()) ++counts[reason];
  }
  std::vector<std::string> parts;
  for (const auto& [reason, n] : counts) parts.push_back(fmt::format("{} {}", n, reason));
  std::sort(parts.begin(), parts.end());
  if (parts.empty()) return head + ".";
  return fmt::format("{}: {}.", head, absl::StrJoin(parts, ", "));
}

}  // namespace mkube::scheduler::framework
