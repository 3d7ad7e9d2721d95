#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"
#include "nlohmann/json.hpp"

// What the front reads of Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf:
// the magic "k8s\0", then a runtime.Unknown holding the object's bytes), for the bodies
// kubectl's typed clients send that way.
namespace mkube::apiserver::rest {

// The object's own bytes and its apiVersion and kind, out of the envelope.
struct ProtobufObject {
  std::string api_version, kind, raw;
};
absl::StatusOr<ProtobufObject> UnwrapProtobuf(const std::string& body);

// An object of one of mkube's kinds from Kubernetes' protobuf bytes (the envelope's raw), as
// the JSON Kubernetes would write for it: fields by Kubernetes' field numbers, times and
// quantities as strings, empty values left out. A field mkube does not model, when set, is an
// error naming it, as for JSON.
absl::StatusOr<nlohmann::ordered_json> ObjectJsonFromProtobuf(
    const std::string& raw, const google::protobuf::Descriptor* descriptor);

// A SelfSubjectAccessReview's spec as JSON ({"resourceAttributes": {...}} or
// {"nonResourceAttributes": {...}}) from its protobuf bytes.
absl::StatusOr<nlohmann::ordered_json> AccessReviewSpecFromProtobuf(const std::string& raw);

}  // namespace mkube::apiserver::rest
