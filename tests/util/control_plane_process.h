#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tests/util/process.h"

namespace mkube::testing {

// The real mkube-scheduler, plaintext to the apiserver with the test scheduler token, its
// files under dir; leader election with short test times (lease 2 s) unless told otherwise.
class SchedulerProcess {
 public:
  SchedulerProcess(std::string dir, std::string apiserver, std::string identity = "sched-a")
      : dir_(std::move(dir)), apiserver_(std::move(apiserver)), identity_(std::move(identity)) {}
  ~SchedulerProcess() { Stop(); }

  // Starts it and waits until its caches have synced (not until it leads).
  absl::Status Start();
  void Stop();
  void Kill9() { if (proc_) proc_->Kill(); }
  bool Running() { return proc_ && proc_->Running(); }
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }
  std::string log() const { return ReadFile(dir_ + "/scheduler.log"); }
  std::vector<std::string> extra;

 private:
  std::string dir_, apiserver_, identity_;
  std::unique_ptr<Subprocess> proc_;
};

}  // namespace mkube::testing
