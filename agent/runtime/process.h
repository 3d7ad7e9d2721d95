#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/runtime/sandbox_spec.h"

namespace mkube::agent::runtime {

// How to start one process of a container.
struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] as given; resolved through PATH in env
  std::vector<std::string> env;   // "NAME=value", the whole environment
  std::string dir;                // working directory
  std::string log_path;           // stdout and stderr are appended here
  SandboxSpec sandbox;            // its root and user (dir is inside that root when isolated)
  std::string program;            // argv[0] as found already (inside the sandbox); else looked up
  bool pause = false;             // no program: the monitor's child holds the pod's PID namespace
};

// Where exec may find argv[0]: itself when it has a '/', else name under each folder of the
// environment's PATH (a default PATH when it has none), in order.
std::vector<std::string> PathCandidates(const std::string& name,
                                        const std::vector<std::string>& env);

// Where argv[0] is: itself when it has a '/', else the first match on PATH.
absl::StatusOr<std::string> ResolveExecutable(const std::string& name,
                                              const std::vector<std::string>& env);

// In a child just forked by the agent, before exec (async-signal-safe only): a process group
// (or, for a terminal, a session) of its own, killed with the agent, signals unblocked.
// Exits the child if the agent is gone already.
void PrepareChild(pid_t parent, bool own_session);

// How a process ended.
struct ExitInfo {
  int exit_code = 0;  // 128+N when killed by signal N, as a shell reports it
  int signal = 0;
  std::string message;  // why it could not be started at all (empty when it ran)
  std::string reason;   // OOMKilled: the kernel killed it for its memory limit
};
ExitInfo ExitFromWaitStatus(int status);

// A container's process as the agent records it beside its log, so that an agent restarted
// after a crash finds what it started and adopts it instead of starting it again.
struct ProcessRecord {
  pid_t pid = 0;            // the container's first process, leader of its process group
  pid_t monitor = 0;        // waits for it and writes its exit record
  int64_t start_ticks = 0;  // its start time (/proc/<pid>/stat): tells a reused pid apart
  int64_t started_unix = 0;
  std::vector<std::string> env;  // what exec in the container runs with
  std::string dir;
  bool isolated = false;  // in a root of its own (exec joins its namespaces)
  Identity identity;      // who its processes are
  std::vector<std::string> cgroups;  // the cgroups its processes are in
};
absl::Status WriteRecord(const std::string& path, const ProcessRecord& r);
absl::StatusOr<ProcessRecord> ReadRecord(const std::string& path);

// Starts the spec under a monitor (the mkube-monitor program at monitor_path): a process in a
// session of its own, which outlives the agent, waits for the container and writes
// `exit_path` when it ends. The container runs in a process group of its own (so its whole
// tree can be signalled) and dies with its monitor. It execs only after its record is written
// to `record_path`, so there is never a container the agent could not find again.
absl::StatusOr<ProcessRecord> StartMonitored(const std::string& monitor_path,
                                             const ProcessSpec& spec,
                                             const std::string& record_path,
                                             const std::string& exit_path);
// mkube-monitor beside the running program.
std::string DefaultMonitorPath();
// The exit a monitor recorded, if it has.
std::optional<ExitInfo> ReadExitRecord(const std::string& path);
// Whether the recorded process still runs (and is the same one).
bool Alive(const ProcessRecord& r);
// Reaps a monitor this agent started if it has ended (no zombies left behind); true once it
// is gone.
bool ReapMonitor(pid_t monitor);

// Signals the process group led by pid.
void SignalGroup(pid_t pid, int sig);

}  // namespace mkube::agent::runtime
