#pragma once

#include <string>

#include "api/kinds.h"
#include "google/protobuf/message.h"

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

}  // namespace mkube::api
