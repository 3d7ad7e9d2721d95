#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tests/util/process.h"

namespace mkube::testing {

// A control-plane daemon that lists and watches through the apiserver (mkube-scheduler,
// mkube-controller-manager): plaintext with its test token, its files under dir, leader
// election with short test times (lease 2 s) unless told otherwise.
class ControlPlaneProcess {
 public:
  // `name`: the binary without its "mkube-" prefix; `token`: a token of kTokens.
  ControlPlaneProcess(std::string name, std::string token, std::string dir, std::string apiserver,
                      std::string identity)
      : name_(std::move(name)),
        token_(std::move(token)),
        dir_(std::move(dir)),
        apiserver_(std::move(apiserver)),
        identity_(std::move(identity)) {}
  ~ControlPlaneProcess() { Stop(); }

  // Starts it and waits until its caches have synced (not until it leads).
  absl::Status Start();
  void Stop();
  void Kill9() { if (proc_) proc_->Kill(); }
  bool Running() { return proc_ && proc_->Running(); }
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }
  std::string log() const { return ReadFile(dir_ + "/" + name_ + ".log"); }
  std::vector<std::string> extra;

 private:
  std::string name_, token_, dir_, apiserver_, identity_;
  std::unique_ptr<Subprocess> proc_;
};

// The real mkube-scheduler.
class SchedulerProcess : public ControlPlaneProcess {
 public:
  SchedulerProcess(std::string dir, std::string apiserver, std::string identity = "sched-a")
      : ControlPlaneProcess("scheduler", "sched-token", std::move(dir), std::move(apiserver),
                            std::move(identity)) {}
};

// The real mkube-controller-manager.
class ControllerManagerProcess : public ControlPlaneProcess {
 public:
  ControllerManagerProcess(std::string dir, std::string apiserver, std::string identity = "cm-a")
      : ControlPlaneProcess("controller-manager", "cm-token", std::move(dir), std::move(apiserver),
                            std::move(identity)) {}
};

}  // namespace mkube::testing
