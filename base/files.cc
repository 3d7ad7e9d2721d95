#include "base/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fmt/format.h"

namespace mkube {

namespace {

absl::Status Errno(std::string_view what, const std::string& path) {
  return absl::InternalError(fmt::format("cannot {} {}: {}", what, path, std::strerror(errno)));
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, std::string_view content,
                                 mode_t mode) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Errno("create", tmp);
  while (!content.empty()) {
    const ssize_t n = write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status st = Errno("write", tmp);
      close(fd);
      unlink(tmp.c_str());
      return st;
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  if (close(fd) != 0) {
    absl::Status st = Errno("write", tmp);
    unlink(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status st = Errno("replace", path);
    unlink(tmp.c_str());
    return st;
  }
  return absl::OkStatus();
}

}  // namespace mkube
