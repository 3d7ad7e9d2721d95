#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/kinds.h"

// The Kubernetes API's resource paths:
//   /api/v1/<resource>[/<name>[/<subresource>]]
//   /api/v1/namespaces/<ns>/<resource>[/<name>[/<subresource>]]
//   /apis/<group>/<version>/... likewise
namespace mkube::apiserver::rest {

struct Target {
  std::string group, version;
  const api::KindInfo* kind = nullptr;  // null for a review (see review)
  std::string review;                   // "selfsubjectreviews", ...
  std::string ns;                       // from the path
  std::string name;
  std::string subresource;
};

// Whether `path` is under /api/ or /apis/ with a resource after the group-version.
bool IsResourcePath(std::string_view path);
// The target of a resource path; NotFound (with Kubernetes' wording) when the group,
// version or resource is not served, InvalidArgument when the path is malformed.
absl::StatusOr<Target> ParseTarget(std::string_view path);

// The segments of a path, percent-decoded.
std::vector<std::string> Segments(std::string_view path);

}  // namespace mkube::apiserver::rest
