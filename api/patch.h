#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

// The four patch types of Kubernetes, on objects' JSON forms: shared by the apiserver (which
// applies them to the stored object) and mkubectl (which shows what a patch would do).
namespace mkube::api {

using PatchJson = nlohmann::ordered_json;

// RFC 6902 JSON Patch: add, remove, replace, move, copy and test, with RFC 6901 paths. An
// operation that cannot apply fails the whole patch, naming it.
absl::StatusOr<PatchJson> ApplyJsonPatch(const PatchJson& doc, const PatchJson& ops);

// Kubernetes' strategic merge patch: as a JSON merge patch, except that the lists Kubernetes'
// types declare with patchStrategy=merge (containers, volumes and env by name, container
// ports by containerPort, volumeMounts by mountPath, conditions and addresses by type,
// ownerReferences by uid, finalizers as a set, ...) merge element by element on their key,
// while the others (spec.taints, spec.tolerations, args, ...) are replaced whole. Directives:
// "$patch": "delete" | "replace" | "merge" on maps and list elements,
// "$setElementOrder/<list>", "$retainKeys" and "$deleteFromPrimitiveList/<list>".
absl::StatusOr<PatchJson> ApplyStrategicMergePatch(const PatchJson& doc, const PatchJson& patch);

// The key the list field `field` merges on in a strategic merge patch, as Kubernetes' types
// declare it (patchMergeKey); none for atomic lists. `service_port`: the list's elements are
// a Service's ports (keyed by port, not containerPort).
std::optional<std::string> MergeKeyOf(const std::string& field, bool service_port = false);

// The same for a list whose elements look like `sample`: "ports" merges on containerPort in a
// container and on port in a Service's spec. Lists with no key are atomic: replaced whole
// (taints and tolerations among them, as Kubernetes has them).
std::optional<std::string> MergeKey(const std::string& field, const PatchJson& sample);
// Lists of scalars that merge as sets (finalizers).
bool MergedPrimitiveList(const std::string& field);

// The JSON merge patch (RFC 7386) that turns `from` into `to`.
PatchJson MergePatchBetween(const PatchJson& from, const PatchJson& to);

// The patch types by their HTTP content types.
enum class PatchType { kMerge, kStrategic, kJson, kApply };
// application/merge-patch+json, application/strategic-merge-patch+json,
// application/json-patch+json, application/apply-patch+yaml; absent for the others.
std::optional<PatchType> PatchTypeOf(std::string_view content_type);
// "merge", "strategic", "json", "apply": the names mkube's gRPC API uses.
std::string PatchTypeName(PatchType t);
std::optional<PatchType> PatchTypeNamed(std::string_view name);

// An apply patch's configuration (YAML or JSON) as JSON.
absl::StatusOr<PatchJson> LoadApplyConfig(std::string_view text);

// `doc` with `patch` (text) applied as `type` asks; kApply merges the applied configuration
// as a strategic merge patch does.
absl::StatusOr<PatchJson> ApplyPatch(const PatchJson& doc, PatchType type, std::string_view patch);

}  // namespace mkube::api
