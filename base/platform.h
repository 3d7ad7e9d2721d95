#pragma once

#include <string>

namespace mkube {

// This machine's architecture as Go, OCI images and Kubernetes' kubernetes.io/arch label name
// it (amd64, arm64, 386, arm, ppc64le, s390x, riscv64, loong64), or the kernel's own name for
// one they do not know.
std::string HostArchitecture();

}  // namespace mkube
