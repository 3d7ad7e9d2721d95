#pragma once

#include "google/protobuf/repeated_ptr_field.h"
#include "proto/api/core.pb.h"

// Taints and tolerations as Kubernetes matches them (k8s.io/api/core/v1 ToleratesTaint).
namespace mkube::api {

// An empty effect matches every effect; an empty key with Exists matches every key; Equal
// (or no operator) wants the same value, Exists any value.
bool Tolerates(const Toleration& toleration, const Taint& taint);
bool Tolerated(const google::protobuf::RepeatedPtrField<Toleration>& tolerations,
               const Taint& taint);

}  // namespace mkube::api
