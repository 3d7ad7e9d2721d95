#include "scheduler/framework/explain.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace mkube::scheduler::framework {

std::string ExplainText(const ScheduleResult& result, size_t num_nodes, size_t top) {
  std::string out;
  const Diagnosis& d = result.diagnosis;
  if (!d.pre_filter.ok()) {
    out += fmt::format("  PreFilter {} rejected the pod: {}\n", d.pre_filter.plugin(),
                       absl::StrJoin(d.pre_filter.reasons(), ", "));
  } else if (num_nodes > 0) {
    out += fmt::format("  Filters: {} of {} nodes feasible\n", d.feasible.size(), num_nodes);
    size_t width = 4;
    std::vector<const std::pair<std::string, Status>*> rejected;
    for (const auto& r : d.rejected) {
      width = std::max(width, r.first.size());
      rejected.push_back(&r);
    }
    std::sort(rejected.begin(), rejected.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    for (const auto* r : rejected) {
      const auto& [node, st] = *r;
      out += fmt::format("    {:<{}}  rejected by {}: {}\n", node, width, st.plugin(),
                         absl::StrJoin(st.reasons(), ", "));
    }
  }
  if (!result.scores.empty()) {
    const size_t shown = std::min(top, result.scores.size());
    out += fmt::format("  Scores (raw → normalized × weight), best {} of {}:\n", shown,
                       result.scores.size());
    for (size_t i = 0; i < shown; ++i) {
      const NodeScore& s = result.scores[i];
      std::vector<std::string> parts;
      for (const auto& p : s.plugins) {
        parts.push_back(
            fmt::format("{} {}→{}×{}={}", p.plugin, p.raw, p.normalized, p.weight, p.weighted));
      }
      out += fmt::format("    {}  total {}: {}\n", s.node->name(), s.total,
                         absl::StrJoin(parts, ", "));
    }
  }
  if (result.status.ok()) {
    out += fmt::format("  Chosen: {}", result.node);
    if (result.scores.size() > 1 && result.scores[0].total == result.scores[1].total) {
      out += " (a tie, broken at random)";
    }
    out += "\n";
  } else {
    out += fmt::format("  Unschedulable: {}\n", absl::StrJoin(result.status.reasons(), ", "));
  }
  return out;
}

}  // namespace mkube::scheduler::framework
