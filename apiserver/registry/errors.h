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

// A write that names no version and lost to other writers `attempts` times in a row: it is
// not a conflict of the caller's making, so not a 409 (Kubernetes' storage would retry until
// the request's timeout: 504).
inline absl::Status KeptChanging(const api::KindInfo& kind, const std::string& name,
                                 int attempts) {
  return absl::DeadlineExceededError(fmt::format(
      "Timeout: {} \"{}\" was changed by other writers {} times while this request was "
      "applied; please try again",
      QualifiedResourceOf(kind), name, attempts));
}

inline absl::Status AlreadyExists(const api::KindInfo& kind, const std::string& name) {
  return absl::AlreadyExistsError(
      fmt::format("{} \"{}\" already exists", QualifiedResourceOf(kind), name));
}

}  // namespace mkube::apiserver::registry
