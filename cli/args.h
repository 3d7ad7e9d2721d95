#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"

namespace mkube::cli {

// One argument of `mkubectl taint`: key[=value]:Effect to add, key[:Effect]- to remove.
struct TaintSpec {
  std::string key, value, effect;
  bool remove = false;
};
// Errors are worded as kubectl words them ("invalid taint spec: ...").
absl::StatusOr<TaintSpec> ParseTaint(const std::string& spec);

// A duration flag as kubectl takes it: "30s", "2m", "1h", a bare number of seconds, or 0.
absl::StatusOr<std::chrono::seconds> ParseDuration(const std::string& text,
                                                   const std::string& flag);

}  // namespace mkube::cli
