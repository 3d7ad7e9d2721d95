#include "tests/util/scheduler_process.h"

#include <signal.h>

#include <filesystem>
#include <fstream>

namespace mkube::testing {

absl::Status SchedulerProcess::Start() {
  std::filesystem::create_directories(dir_);
  const std::string ready = dir_ + "/scheduler.ready";
  std::filesystem::remove(ready);
  std::ofstream(dir_ + "/scheduler.token") << "sched-token\n";
  std::vector<std::string> argv = {BinDir() + "/mkube-scheduler",
                                   "--apiserver", apiserver_,
                                   "--insecure-plaintext",
                                   "--token-file", dir_ + "/scheduler.token",
                                   "--identity", identity_,
                                   "--leader-elect-lease-duration", "2s",
                                   "--leader-elect-renew-deadline", "1500ms",
                                   "--leader-elect-retry-period", "200ms",
                                   "--ready-file", ready};
  argv.insert(argv.end(), extra.begin(), extra.end());
  proc_ = std::make_unique<Subprocess>(argv, dir_ + "/scheduler.log");
  if (!WaitForFileLine(ready, std::chrono::seconds(30))) {
    return absl::UnavailableError("scheduler did not start:\n" + log());
  }
  return absl::OkStatus();
}

void SchedulerProcess::Stop() {
  if (!proc_ || !proc_->Running()) return;
  proc_->Signal(SIGTERM);
  if (!proc_->Wait(std::chrono::seconds(10))) proc_->Kill();
}

}  // namespace mkube::testing
