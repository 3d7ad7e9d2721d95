#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "tests/util/process.h"

namespace mkube::testing {

// A cluster as a user runs it: started by deploy/up.sh in a state dir of its own (free ports,
// its own address block), every daemon under up.sh's supervisor, stopped by deploy/down.sh.
// Daemons are named as up.sh names them: store, apiserver, scheduler, controller-manager,
// agent-master01, agent-node01, ...
class UpCluster {
 public:
  struct Options {
    int nodes = 2;
    int address_block = 23;
    std::vector<std::string> extra_flags;
  };
  UpCluster() = default;
  ~UpCluster();

  absl::Status Up(const Options& options);
  // down.sh; then checks that nothing it started runs: every daemon and supervisor it
  // recorded, and every pod process that ran before.
  absl::Status Down();

  // The daemon's pid as its supervisor recorded it; -1 when none is recorded.
  pid_t Pid(const std::string& daemon) const;
  // kill -9 of the daemon (not its supervisor); returns the pid killed.
  pid_t Kill9(const std::string& daemon) const;
  // Waits until the daemon runs again under a pid other than `old`.
  bool WaitRestarted(const std::string& daemon, pid_t old, std::chrono::milliseconds limit) const;
  std::string Log(const std::string& daemon) const;
  // The tail of every daemon's log, for a failing assertion.
  std::string Logs() const;
  // The pods' processes that run now (containers and pause processes), as the agents'
  // records under the state dir name them.
  struct Process {
    pid_t pid;
    std::string start;  // its start time in clock ticks (field 22 of /proc/PID/stat)
  };
  std::vector<Process> PodProcesses() const;

  // An admin client of the apiserver (a connection of its own).
  std::unique_ptr<client::GrpcClient> Client() const;
  const std::string& state() const { return dir_.path(); }

 private:
  CommandResult Script(const std::string& name, std::vector<std::string> args) const;

  TempDir dir_;
  bool up_ = false;
};

// Whether a process lives (not a zombie); with `start`, only if it is still the process that
// started then (the kernel reuses pids).
bool Alive(pid_t pid, const std::string& start = "");

}  // namespace mkube::testing
