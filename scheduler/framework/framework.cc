#include "scheduler/framework/framework.h"

#include <algorithm>
#include <set>

namespace mkube::scheduler::framework {
namespace {

constexpr size_t kMinFeasibleNodesToFind = 100;
constexpr int kMinFeasibleNodesPercentageToFind = 5;

// Scores of the feasible nodes: every plugin's (unless its PreScore skipped the pod) through
// NormalizeScore, times its weight, summed.
Status ScoreNodes(const Profile& profile, CycleState& state, const api::Pod& pod,
                  const std::vector<const NodeInfo*>& nodes, const Snapshot& snapshot, bool explain,
                  std::vector<NodeScore>& out) {
  std::set<std::string_view> skipped;
  for (const PreScorePlugin* p : profile.pre_scores) {
    Status st = p->PreScore(state, pod, nodes, snapshot);
    if (st.skip()) {
      skipped.insert(p->Name());
    } else if (!st.ok()) {
      return std::move(st.set_plugin(p->Name()));
    }
  }
  out.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) out[i].node = nodes[i];
  std::vector<int64_t> raw(nodes.size()), scores(nodes.size());
  for (const auto& [plugin, weight] : profile.scores) {
    if (skipped.contains(plugin->Name())) continue;
    for (size_t i = 0; i < nodes.size(); ++i) raw[i] = plugin->Score(state, pod, *nodes[i]);
    scores = raw;
    plugin->NormalizeScore(state, pod, scores);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int64_t weighted = scores[i] * weight;
      out[i].total += weighted;
      if (explain) {
        out[i].plugins.push_back(
            {std::string(plugin->Name()), raw[i], scores[i], weight, weighted});
      }
    }
  }
  return {};
}

// The best node; among equals, each is as likely (reservoir sampling).
const NodeScore& SelectHost(const std::vector<NodeScore>& scores, std::mt19937_64& rng) {
  size_t best = 0, ties = 1;
  for (size_t i = 1; i < scores.size(); ++i) {
    if (scores[i].total > scores[best].total) {
      best = i;
      ties = 1;
    } else if (scores[i].total == scores[best].total) {
      ++ties;
      if (std::uniform_int_distribution<size_t>(0, ties - 1)(rng) == 0) best = i;
    }
  }
  return scores[best];
}

}  // namespace

size_t NumFeasibleNodesToFind(size_t num_nodes, int percentage) {
  if (num_nodes < kMinFeasibleNodesToFind) return num_nodes;
  int64_t pct = percentage;
  if (pct <= 0) {
    pct = 50 - static_cast<int64_t>(num_nodes) / 125;
    pct = std::max<int64_t>(pct, kMinFeasibleNodesPercentageToFind);
  }
  if (pct >= 100) return num_nodes;
  const size_t n = num_nodes * static_cast<size_t>(pct) / 100;
  return std::max(n, kMinFeasibleNodesToFind);
}

ScheduleResult Schedule(const Profile& profile, const api::Pod& pod, const Snapshot& snapshot,
                        const ScheduleOptions& options, std::mt19937_64& rng) {
  ScheduleResult result;
  const auto& nodes = snapshot.nodes();
  const size_t n = nodes.size();
  if (n == 0) {
    result.status = Status::Unschedulable("no nodes available to schedule pods");
    return result;
  }
  CycleState state;
  Diagnosis& d = result.diagnosis;
  d.pre_filter = RunPreFilters(profile.filters, state, pod, snapshot);
  if (d.pre_filter.code() == Code::kError) {
    result.status = d.pre_filter;
    return result;
  }
  if (!d.pre_filter.ok()) {
    result.status = Status::Unschedulable(FitErrorMessage(n, d));
    return result;
  }
  const size_t want =
      options.explain ? n : NumFeasibleNodesToFind(n, profile.percentage_of_nodes_to_score);
  const size_t start = options.start_index % n;
  size_t processed = 0;
  for (; processed < n && d.feasible.size() < want; ++processed) {
    const NodeInfo& node = *nodes[(start + processed) % n];
    Status verdict = RunFilterPlugins(profile.filters, state, pod, node);
    if (verdict.ok()) {
      d.feasible.push_back(&node);
    } else if (verdict.code() == Code::kError) {
      result.status = std::move(verdict);
      return result;
    } else {
      d.rejected.emplace_back(node.name(), std::move(verdict));
    }
  }
  result.evaluated = processed;
  result.next_start_index = (start + processed) % n;
  if (d.feasible.empty()) {
    result.status = Status::Unschedulable(FitErrorMessage(n, d));
    return result;
  }
  if (d.feasible.size() == 1 && !options.explain) {
    result.node = d.feasible[0]->name();  // nothing to compare it with
    return result;
  }
  Status scored =
      ScoreNodes(profile, state, pod, d.feasible, snapshot, options.explain, result.scores);
  if (!scored.ok()) {
    result.status = std::move(scored);
    return result;
  }
  result.node = SelectHost(result.scores, rng).node->name();
  if (options.explain) {
    std::stable_sort(result.scores.begin(), result.scores.end(),
                     [](const NodeScore& a, const NodeScore& b) { return a.total > b.total; });
  } else {
    result.scores.clear();
  }
  return result;
}

}  // namespace mkube::scheduler::framework
