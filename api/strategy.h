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

// An update of `current` with `obj`. With the status subresource, `obj` becomes `current`
// with the status sent. Otherwise the spec and user metadata are the caller's, while identity,
// status and deletion marks stay the server's; the object is defaulted, and its generation
// counts one more when its spec changed.
void PrepareForUpdate(const google::protobuf::Message& current, bool status_only, Object* obj);

// `current` with a JSON merge patch (RFC 7386) applied, decoded as its kind; an error names
// the field the patched document gets wrong.
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ApplyMergePatch(
    const google::protobuf::Message& current, const std::string& merge_patch);

// The grace period a delete of `obj` gives it, when the object is only marked (a pod bound to
// a node terminates gracefully and its node removes it); nullopt when it goes at once.
// `requested`: the grace the request named, if it did.
std::optional<int64_t> GracefulDeletion(const google::protobuf::Message& obj,
                                        std::optional<int64_t> requested);

// A pod bound by a Binding to its target node, as Kubernetes' binding: spec.nodeName set,
// the binding's annotations added, the PodScheduled condition True. The caller has checked
// that the pod is neither bound nor being deleted.
void ApplyBinding(const Binding& binding, Pod* pod, const std::string& now);

}  // namespace mkube::api
