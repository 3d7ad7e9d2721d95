#pragma once

// The registry's refusals, worded as Kubernetes words them.
#include <string>

#include "absl/status/status.h"
#include "api/kinds.h"
#include "fmt/format.h"

namespace mkube::apiserver::registry {

// "pods", or "deployments.apps": how Kubernetes names a resource in messages.
inline std::string QualifiedResourceOf(const api::KindInfo& kind) {
  return kind.group.empty() ? kind.resource : kind.resource + "." + kind.group;
}

inline absl::Status NotFound(const api::KindInfo& kind, const std::string& name) {
  return absl::NotFoundError(fmt::format("{} \"{}\" not found", QualifiedResourceOf(kind), name));
}

inline absl::Status Conflict(const api::KindInfo& kind, const std::string& name) {
  return absl::AbortedError(fmt::format(
      "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply "
      "your changes to the latest version and try again",
      QualifiedResourceOf(kind), name));
}

inline absl::Status AlreadyExists(const api::KindInfo& kind, const std::string& name) {
  return absl::AlreadyExistsError(
      fmt::format("{} \"{}\" already exists", QualifiedResourceOf(kind), name));
}

}  // namespace mkube::apiserver::registry
