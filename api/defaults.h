#pragma once

#include "api/kinds.h"

namespace mkube::api {

// Fills in what Kubernetes fills in when an object is created: namespace "default",
// restartPolicy Always, terminationGracePeriodSeconds 30, the not-ready/unreachable NoExecute
// tolerations of 300 s, replicas 1, rolling-update strategies, and for legacy
// (extensions/v1beta1, apps/v1beta1) Deployments without a selector, one from the template's
// labels. Idempotent.
void Default(Object& obj);

}  // namespace mkube::api
