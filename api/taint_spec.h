#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace mkube::api {

// A taint as written on command lines (`mkubectl taint`, the agent's --register-with-taints):
// key[=value]:Effect to add, key[:Effect]- to remove.
struct TaintSpec {
  std::string key, value, effect;
  bool remove = false;
};
// Errors are worded as kubectl words them ("invalid taint spec: ...").
absl::StatusOr<TaintSpec> ParseTaint(const std::string& spec);

}  // namespace mkube::api
