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

// A node's allocatable resources; "pods" is the number of pods it may run.
ResourceList Allocatable(const api::Node& node);

}  // namespace mkube::scheduler::framework
