#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "proto/api/core.pb.h"

namespace mkube::controller {

// The pod-template-hash of a template: FNV-1a of its deterministic encoding and the collision
// count, spelled in the consonants and digits Kubernetes uses for generated names. A
// Deployment's ReplicaSets are named and labelled by it; a DaemonSet's pods are labelled by it.
std::string TemplateHash(const api::PodTemplateSpec& tmpl, std::optional<int32_t> collision_count);

}  // namespace mkube::controller
