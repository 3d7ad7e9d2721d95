#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <string_view>

namespace mkube::client {

// Writes all of `data` to the socket (no SIGPIPE); false once it is closed.
inline bool SendAll(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace mkube::client
