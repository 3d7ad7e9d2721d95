#include "client/daemon.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fmt/format.h"

namespace mkube::client {

std::string Hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

void WriteReadyFile(const std::string& path, const std::string& content) {
  if (path.empty()) return;
  std::ofstream(path + ".tmp") << content << "\n";
  std::filesystem::rename(path + ".tmp", path);
}

absl::StatusOr<absl::Duration> PositiveDuration(const std::string& flag, const std::string& text) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: \"{}\" is not a positive duration (e.g. 15s)", flag, text));
  }
  return d;
}

}  // namespace mkube::client
