#pragma once

#include <cstdint>

#include "proto/api/meta.pb.h"

namespace mkube::controller {

// An int-or-percent of `total` ("25%" of 10: 3 rounded up, 2 down); a bad percentage is 0.
// A rollout's maxSurge and maxUnavailable, a DaemonSet's maxUnavailable, a budget's
// minAvailable and maxUnavailable.
int32_t Scaled(const api::IntOrString& value, int32_t total, bool round_up);

}  // namespace mkube::controller
