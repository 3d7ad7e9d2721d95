#include "tests/util/control_plane_process.h"

#include <signal.h>

#include <filesystem>
#include <fstream>

namespace mkube::testing {

absl::Status ControlPlaneProcess::Start() {
  std::filesystem::create_directories(dir_);
  const std::string ready = dir_ + "/" + name_ + ".ready";
  const std::string token = dir_ + "/" + name_ + ".token";
  std::filesystem::remove(ready);
  std::ofstream(token) << token_ << "\n";
  std::vector<std::string> argv = {BinDir() + "/mkube-" + name_,
                                   "--apiserver", apiserver_,
                                   "--insecure-plaintext",
                                   "--token-file", token,
                                   "--identity", identity_,
                                   "--leader-elect-lease-duration", "2s",
                                   "--leader-elect-renew-deadline", "1500ms",
                                   "--leader-elect-retry-period", "200ms",
                                   "--ready-file", ready};
  argv.insert(argv.end(), extra.begin(), extra.end());
  proc_ = std::make_unique<Subprocess>(argv, dir_ + "/" + name_ + ".log");
  if (!WaitForFileLine(ready, std::chrono::seconds(30))) {
    return absl::UnavailableError(name_ + " did not start:\n" + log());
  }
  return absl::OkStatus();
}

void ControlPlaneProcess::Stop() {
  if (!proc_ || !proc_->Running()) return;
  proc_->Signal(SIGTERM);
  if (!proc_->Wait(std::chrono::seconds(10))) proc_->Kill();
}

}  // namespace mkube::testing
