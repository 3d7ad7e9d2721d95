#pragma once

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace mkube::cli {

using PatchJson = nlohmann::ordered_json;

// RFC 6902 JSON Patch: add, remove, replace, move, copy and test, with RFC 6901 paths. An
// operation that cannot apply fails the whole patch, naming it.
absl::StatusOr<PatchJson> ApplyJsonPatch(const PatchJson& doc, const PatchJson& ops);

// Kubernetes' strategic merge patch for the lists mkube's kinds have: as a JSON merge patch,
// except that lists of containers, volumes, env, ports, volume mounts, taints, conditions
// and the like merge element by element on their key (name, containerPort, mountPath, key,
// type), and an element with "$patch": "delete" removes the one with its key.
absl::StatusOr<PatchJson> ApplyStrategicMergePatch(const PatchJson& doc, const PatchJson& patch);

// The JSON merge patch (RFC 7386) that turns `from` into `to`.
PatchJson MergePatchBetween(const PatchJson& from, const PatchJson& to);

}  // namespace mkube::cli
