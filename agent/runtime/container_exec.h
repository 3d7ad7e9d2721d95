#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/runtime/sandbox.h"

namespace mkube::agent::runtime {

// A running container, as a command run in it (exec, exec probes) needs it.
struct ExecTarget {
  std::vector<std::string> env;
  std::string dir;        // its working directory (inside its root when isolated)
  pid_t pid = 0;          // its first process: whose namespaces are joined
  bool isolated = false;  // has a root of its own
  Identity identity;      // who its processes are
  std::vector<std::string> cgroups;  // the cgroups they are in
};

// What the new process's 0, 1 and 2 are; with `tty` they are a terminal it makes its
// controlling one, in a session of its own (else a process group of its own).
struct StdFds {
  int in = -1, out = -1, err = -1;
  bool tty = false;
  std::string
      tty_path;  // the terminal's name on the node (/dev/pts/N): shown there in the container
};

// Runs argv in the container: its namespaces, folder, environment and user. The command is
// looked up through the container's PATH there; when it cannot be run, the error is the
// runtime's ("exec: \"x\": executable file not found in $PATH") and nothing is left running.
// The process dies with the agent.
absl::StatusOr<pid_t> SpawnInContainer(const ExecTarget& target,
                                       const std::vector<std::string>& argv, const StdFds& fds);

}  // namespace mkube::agent::runtime
