#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "proto/api/core.pb.h"

namespace mkube::scheduler::framework {

// Amounts by resource name ("cpu", "memory", "ephemeral-storage", extended ones), in
// thousandths of a unit: millicores for cpu, milli-bytes for memory.
using ResourceList = std::map<std::string, int64_t>;

// What a pod asks for, as Kubernetes computes it for scheduling: per resource, the larger of
// the sum over its containers and the largest of its init containers (which run one at a
// time, before them), plus the pod's overhead. Malformed quantities count as nothing (the
// apiserver refuses them).
ResourceList PodRequests(const api::Pod& pod);

// The pod's cpu (millicores) and memory (milli-bytes) as the least-allocated and balanced
// scores see them: a container that requests no cpu counts as 100m, none memory as 200Mi.
struct NonZero {
  int64_t cpu = 0;
  int64_t memory = 0;
};
NonZero NonZeroRequests(const api::Pod& pod);
inline constexpr int64_t kDefaultMilliCpuRequest = 100;
inline constexpr int64_t kDefaultMemoryRequest = int64_t{200} << 20;  // bytes

// A node's allocatable resources; "pods" is the number of pods it may run.
ResourceList Allocatable(const api::Node& node);

}  // namespace mkube::scheduler::framework
