#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "api/patch.h"
#include "apiserver/rest/front.h"

// fieldValidation for patches: the fields a patch names that its kind has not are refused
// (Strict, 400 with Kubernetes' "strict decoding error"), or left out of it and warned of
// (Warn, the default) or not (Ignore), so that the patched object is what a decode of it
// would keep.
namespace mkube::apiserver::rest {

// The patch to send to the registry, of any of the four types.
absl::StatusOr<std::string> PatchBody(Front::Call& c, api::PatchType type);

}  // namespace mkube::apiserver::rest
