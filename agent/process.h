#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mkube::agent {

// How to start one process of a container.
struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] as given; resolved through PATH in env
  std::vector<std::string> env;   // "NAME=value", the whole environment
  std::string dir;                // working directory
  std::string log_path;           // stdout and stderr are appended here
};

// Where argv[0] is: itself when it has a '/', else the first match on PATH.
absl::StatusOr<std::string> ResolveExecutable(const std::string& name,
                                              const std::vector<std::string>& env);

// In a child just forked by the agent, before exec (async-signal-safe only): a process group
// (or, for a terminal, a session) of its own, killed with the agent, signals unblocked.
// Exits the child if the agent is gone already.
void PrepareChild(pid_t parent, bool own_session);

// Forks and execs the spec in a process group of its own (so the whole tree can be signalled)
// and returns its pid. Everything the child needs is prepared before the fork.
absl::StatusOr<pid_t> StartProcess(const ProcessSpec& spec);

// How a reaped process ended.
struct ExitInfo {
  int exit_code = 0;  // 128+N when killed by signal N, as a shell reports it
  int signal = 0;
};
// Non-blocking: the exit of pid if it has ended (and reaps it).
std::optional<ExitInfo> TryReap(pid_t pid);
ExitInfo ExitFromWaitStatus(int status);

// Signals the process group led by pid.
void SignalGroup(pid_t pid, int sig);

}  // namespace mkube::agent
