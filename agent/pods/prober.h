#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/runtime/container_exec.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::pods {

// Where a probe runs: the container's environment and folder (exec), its pod's address and
// ports (tcpSocket, httpGet).
struct ProbeTarget {
  std::string pod_ip;
  runtime::ExecTarget exec;                   // where an exec probe runs
  const api::Container* container = nullptr;  // for named ports
};

// Runs one probe once, as the kubelet does: exec succeeds on exit code 0, tcpSocket when the
// port accepts a connection, httpGet on a status from 200 to 399; each within the probe's
// timeoutSeconds (default 1). A failure says why, in the kubelet's words where it has them.
absl::Status RunProbe(const api::Probe& probe, const ProbeTarget& target);

// The probe's settings with Kubernetes' defaults applied.
struct ProbeTiming {
  absl::Duration initial_delay, period, timeout;
  int success_threshold, failure_threshold;
};
ProbeTiming TimingOf(const api::Probe& probe);

}  // namespace mkube::agent::pods
