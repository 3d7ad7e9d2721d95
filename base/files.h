#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace mkube {

// Writes `content` to `path` through `path`.tmp and a rename over it, so that a reader (one
// waiting for a ready or address file, a process reading its record back after a restart)
// sees the old file or the whole new one, never part of one. The file is made with `mode`
// (before the umask). The error names the file and the reason.
absl::Status WriteFileAtomically(const std::string& path, std::string_view content,
                                 mode_t mode = 0644);

}  // namespace mkube
