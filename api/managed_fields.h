#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/patch.h"
#include "google/protobuf/message.h"

// Server-side apply's field ownership, on objects' JSON forms: which manager owns which fields
// (metadata.managedFields, in Kubernetes' FieldsV1 form), conflicts when an applier sets a
// field another manager owns to another value, and the removal of fields an applier stops
// applying. Lists merge as strategic merge patches do (keyed lists by their merge key, sets
// of scalars by value, the rest atomic).
namespace mkube::api {

// One field, as FieldsV1 names its steps: "f:<field>", "k:<the key fields as JSON>" for an
// element of a keyed list, "v:<the value as JSON>" for an element of a set.
using FieldPath = std::vector<std::string>;
using FieldSet = std::set<FieldPath>;

// The fields `obj` sets: its leaves and the elements of its keyed lists and sets. apiVersion,
// kind, status, and the metadata the server keeps (name, namespace, uid, resourceVersion,
// generation, timestamps, managedFields) are nobody's.
FieldSet FieldsOf(const PatchJson& obj);

PatchJson ToFieldsV1(const FieldSet& fields);
FieldSet FromFieldsV1(const PatchJson& tree);

// A field as Kubernetes prints it in conflicts: .spec.containers[name="web"].image
std::string PathString(const FieldPath& path);

// Who writes, and when.
struct Manager {
  std::string name;         // fieldManager
  std::string api_version;  // of the object as written ("apps/v1")
  std::string time;         // RFC 3339
  std::string subresource;  // written through ("scale"); empty for the object itself
};

// Server-side apply of `config` by `m` onto `live` (which carries its managedFields): the
// configuration merged in, the fields `m` applied before and applies no more removed when no
// other manager owns them, and `m`'s Apply entry set to what it applies now. When other
// managers own fields the configuration sets to other values: ABORTED ("Apply failed with 1
// conflict: conflict with \"kubectl-edit\" using apps/v1: .spec.replicas", the conflicts
// as the status's kConflictsPayload, a JSON list of Kubernetes' causes), unless `force`, which
// takes those fields from them.
absl::StatusOr<PatchJson> ServerSideApply(const PatchJson& live, const PatchJson& config,
                                          const Manager& m, bool force);
inline constexpr char kConflictsPayload[] = "mkube.io/apply-conflicts";

// After a write that is not an apply (a create when `before` is null, an update, a patch) by
// `m`: the fields that changed from `before` to `after` become `m`'s (its Update entry) and
// no other manager's; fields removed are nobody's. Writes `after`'s managedFields.
void RecordUpdate(const PatchJson* before, PatchJson* after, const Manager& m);

// The same on messages, as the apiserver's registry writes them.
// `current` with the configuration `config` (an apply patch's YAML or JSON) applied by `m`.
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ApplyConfiguration(
    const google::protobuf::Message& current, std::string_view config, const Manager& m,
    bool force);
// `after`'s managedFields once `m` wrote it over `before` (null: created).
absl::Status RecordManager(const google::protobuf::Message* before, google::protobuf::Message* after,
                           const Manager& m);
// A created object's managedFields when it was created by applying `config` (the object as
// sent, before the server's defaults): `m` applies the fields it sets.
absl::Status RecordApplied(const PatchJson& config, google::protobuf::Message* created,
                           const Manager& m);

}  // namespace mkube::api
