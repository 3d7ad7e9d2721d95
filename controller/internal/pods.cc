#include "controller/internal/pods.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>

#include "absl/strings/numbers.h"
#include "api/object.h"

namespace mkube::controller {
namespace {

const api::Condition* ReadyCondition(const api::Pod& pod) {
  for (const auto& c : pod.status().conditions()) {
    if (std::string_view(c.type()) == "Ready") return &c;  // sizes compared first
  }
  return nullptr;
}

int PhaseRank(const std::string& phase) {
  if (phase == "Pending") return 0;
  if (phase == "Unknown") return 1;
  if (phase == "Running") return 2;
  return 3;
}

int DeletionCost(const api::Pod& pod) {
  auto it = pod.metadata().annotations().find("controller.kubernetes.io/pod-deletion-cost");
  int cost = 0;
  if (it != pod.metadata().annotations().end() && absl::SimpleAtoi(it->second, &cost)) return cost;
  return 0;
}

int Restarts(const api::Pod& pod) {
  int most = 0;
  for (const auto& s : pod.status().container_statuses()) most = std::max(most, s.restart_count());
  return most;
}

}  // namespace

bool IsActive(const api::Pod& pod) {
  const std::string_view phase = pod.status().phase();  // compared by size first
  return phase != "Succeeded" && phase != "Failed" && pod.metadata().deletion_timestamp().empty();
}

bool IsReady(const api::Pod& pod) {
  const api::Condition* c = ReadyCondition(pod);
  return c && c->status() == "True";
}

std::optional<absl::Time> ReadySince(const api::Pod& pod) {
  const api::Condition* c = ReadyCondition(pod);
  if (!c || c->status() != "True") return std::nullopt;
  return api::ParseRfc3339(c->last_transition_time());
}

bool IsAvailable(const api::Pod& pod, int32_t min_ready_seconds, absl::Time now) {
  if (!IsReady(pod)) return false;
  if (min_ready_seconds <= 0) return true;
  auto since = ReadySince(pod);
  return since && *since + absl::Seconds(min_ready_seconds) <= now;
}

void SortForDeletion(std::vector<PodPtr>* pods) {
  std::map<std::string, int> per_node;
  for (const auto& p : *pods) {
    if (!p->spec().node_name().empty()) ++per_node[p->spec().node_name()];
  }
  // Each pod's rank worked out once (parsing its times is what costs), then sorted by it.
  using Rank = std::tuple<bool, int, bool, int, int, int64_t, int, int64_t>;
  std::vector<std::pair<Rank, PodPtr>> ranked;
  ranked.reserve(pods->size());
  for (auto& p : *pods) {
    const bool assigned = !p->spec().node_name().empty();
    const auto ready = ReadySince(*p);
    // Each element: smaller means deleted sooner.
    Rank rank{
        assigned,
        PhaseRank(p->status().phase()),
        ready.has_value(),
        DeletionCost(*p),
        assigned ? -per_node[p->spec().node_name()] : 0,
        ready ? -absl::ToUnixSeconds(*ready) : int64_t{0},
        -Restarts(*p),
        -absl::ToUnixSeconds(
            api::ParseRfc3339(p->metadata().creation_timestamp()).value_or(absl::UnixEpoch()))};
    ranked.emplace_back(rank, std::move(p));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < ranked.size(); ++i) (*pods)[i] = std::move(ranked[i].second);
}

}  // namespace mkube::controller
