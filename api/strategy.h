#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "api/kinds.h"
#include "google/protobuf/message.h"
#include "proto/api/core.pb.h"

// What the server itself decides about an object on create and update, as Kubernetes' REST
// strategies do; shared by the apiserver's registry and the fake clientset, so both store
// the same object for the same request.
namespace mkube::api {

// A new object: server-set status (a pod starts Pending, a namespace Active), identity (uid,
// creationTimestamp `now`, generation 1) and no deletion marks.
void PrepareForCreate(google::protobuf::Message* obj, const std::string& now);
// A pod's QoS class as Kubernetes works it out from its containers' cpu and memory: Guaranteed
// when every container limits both and asks for exactly that, BestEffort when none asks for or
// limits either, else Burstable.
std::string QosClass(const PodSpec& spec);

// An update of `current` with `obj`. With the status subresource, `obj` becomes `current`
// with the status sent. Otherwise the spec and user metadata are the caller's, while identity,
// status and deletion marks stay the server's; the object is defaulted, and its generation
// counts one more when its spec changed.
void PrepareForUpdate(const google::protobuf::Message& current, bool status_only, Object* obj);

// `current` with a patch applied, decoded as its kind; an error names the field the patched
// document gets wrong. `type`: "merge" (RFC 7386; also when empty), "strategic", "json"
// (RFC 6902) or "apply" (see api/patch.h).
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ApplyPatch(
    const google::protobuf::Message& current, const std::string& type, const std::string& patch);

// The grace period a delete of `obj` gives it, when the object is only marked (a pod bound to
// a node terminates gracefully and its node removes it); nullopt when it goes at once.
// `requested`: the grace the request named, if it did.
std::optional<int64_t> GracefulDeletion(const google::protobuf::Message& obj,
                                        std::optional<int64_t> requested);

// Finalizers of the garbage collector: set by a delete that asks for orphaning or foreground
// propagation, removed by the garbage collector once it has done that work.
inline constexpr char kOrphanFinalizer[] = "orphan";
inline constexpr char kForegroundFinalizer[] = "foregroundDeletion";

// What a delete does to the object `current`: it goes at once, or it is marked (a deletion
// timestamp; the finalizers the propagation policy asks for) and stays until its finalizers
// are gone and, for a pod on a node, its node has stopped it. `requested`: the grace period
// the request named; `propagation`: "Orphan", "Background", "Foreground" or empty (the kind's
// default: Orphan for Jobs, as batch/v1 has it, Background for the others).
struct DeleteDecision {
  // Null: remove the object now. Otherwise the object to store instead.
  std::unique_ptr<google::protobuf::Message> marked;
  // Already being deleted and nothing to change: the current object is the answer.
  bool unchanged = false;
};
absl::StatusOr<DeleteDecision> DecideDelete(const google::protobuf::Message& current,
                                            std::optional<int64_t> requested,
                                            const std::string& propagation,
                                            const std::string& now);
// An object being deleted whose finalizers are all gone and that waits for no node: what an
// update leaving it so must remove instead of storing.
bool ReadyToRemove(const google::protobuf::Message& obj);
// An update may remove finalizers of an object being deleted, never add one.
absl::Status CheckFinalizers(const google::protobuf::Message& current,
                             const google::protobuf::Message& updated);

// Kubernetes' DefaultTolerationSeconds admission: a pod that tolerates neither
// node.kubernetes.io/not-ready nor node.kubernetes.io/unreachable with NoExecute gets a
// toleration of each for the given seconds, so the pods of a lost node are evicted after
// that long rather than at once.
void AddDefaultTolerations(Pod* pod, int64_t not_ready_seconds, int64_t unreachable_seconds);

// A pod bound by a Binding to its target node, as Kubernetes' binding: spec.nodeName set,
// the binding's annotations added, the PodScheduled condition True. The caller has checked
// that the pod is neither bound nor being deleted.
void ApplyBinding(const Binding& binding, Pod* pod, const std::string& now);

}  // namespace mkube::api
