#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "agent/runtime/process.h"

namespace mkube::agent::runtime {

// What the container runtime does to a node's processes, so that the pod workers' decisions
// (restart policy, back-off, adoption, graceful stop) can be tested without forking: the real
// runner starts containers under mkube-monitor (process.h); tests use a fake that ends
// processes on cue (agent/testing/fake_process_runner.h).
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;

  // Starts a container's first process under a monitor that writes `exit_path` when it ends;
  // the process is recorded at `record_path` before it runs.
  virtual absl::StatusOr<ProcessRecord> Start(const ProcessSpec& spec,
                                              const std::string& record_path,
                                              const std::string& exit_path) = 0;
  // The record of a process started earlier (perhaps by an agent that ran before this one).
  virtual absl::StatusOr<ProcessRecord> ReadRecord(const std::string& record_path) = 0;
  // How the process ended, once its monitor has recorded it.
  virtual std::optional<ExitInfo> ReadExit(const std::string& exit_path) = 0;
  // Whether the recorded process still runs (and is the same one).
  virtual bool Alive(const ProcessRecord& record) = 0;
  // Whether a monitor has ended; one this agent started is reaped (no zombie is left).
  virtual bool MonitorGone(pid_t monitor, bool adopted) = 0;
  // Signals the process group the container's first process leads.
  virtual void Signal(pid_t pid, int sig) = 0;
};
using ProcessRunnerPtr = std::unique_ptr<ProcessRunner>;

// Containers as real process groups under the monitor program at `monitor_path`.
ProcessRunnerPtr NewProcessRunner(std::string monitor_path = DefaultMonitorPath());

}  // namespace mkube::agent::runtime
