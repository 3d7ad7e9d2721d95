#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "api/taint_spec.h"

namespace mkube::cli {

using api::ParseTaint;
using api::TaintSpec;

// A duration flag as kubectl takes it: "30s", "2m", "1h", a bare number of seconds, or 0.
absl::StatusOr<std::chrono::seconds> ParseDuration(const std::string& text,
                                                   const std::string& flag);

}  // namespace mkube::cli
