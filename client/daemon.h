#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

// What every daemon's main does alike.
namespace mkube::client {

std::string Hostname();
// Writes `content` to `path` through a temporary file and a rename, so a reader waiting for
// the file never sees it half-written. Nothing when `path` is empty.
void WriteReadyFile(const std::string& path, const std::string& content);
// A duration flag ("15s", "1m30s") that must be positive; the error names the flag.
absl::StatusOr<absl::Duration> PositiveDuration(const std::string& flag, const std::string& text);

}  // namespace mkube::client
