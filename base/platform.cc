#include "base/platform.h"

#include <sys/utsname.h>

#include <map>

namespace mkube {

std::string HostArchitecture() {
  static const std::map<std::string, std::string> kGoNames = {
      {"x86_64", "amd64"}, {"aarch64", "arm64"}, {"arm64", "arm64"},     {"i386", "386"},
      {"i686", "386"},     {"armv7l", "arm"},    {"armv6l", "arm"},      {"ppc64le", "ppc64le"},
      {"s390x", "s390x"},  {"riscv64", "riscv64"}, {"loongarch64", "loong64"}};
  utsname u{};
  if (uname(&u) != 0) return "amd64";
  auto it = kGoNames.find(u.machine);
  return it == kGoNames.end() ? u.machine : it->second;
}

}  // namespace mkube
