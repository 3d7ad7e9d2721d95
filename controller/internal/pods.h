#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "proto/api/core.pb.h"

namespace mkube::controller {

using PodPtr = std::shared_ptr<const api::Pod>;

// Neither finished (Succeeded, Failed) nor being deleted: a pod that counts as a replica.
bool IsActive(const api::Pod& pod);
bool IsReady(const api::Pod& pod);
// When the pod last became Ready, if it is.
std::optional<absl::Time> ReadySince(const api::Pod& pod);
// Ready for at least `min_ready_seconds` at `now`.
bool IsAvailable(const api::Pod& pod, int32_t min_ready_seconds, absl::Time now);

// Orders `pods` so that the ones to delete first come first, as Kubernetes' ReplicaSet
// controller ranks them: unscheduled, then pending (then unknown), then not ready; then the
// lower pod-deletion-cost; then the pods doubled up on a node with more of their kind; then
// the ones ready for the shortest time, restarted most, created last.
void SortForDeletion(std::vector<PodPtr>* pods);

}  // namespace mkube::controller
