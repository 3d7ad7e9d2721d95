#include "base/daemon.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "absl/synchronization/mutex.h"
#include "base/files.h"
#include "base/log.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace mkube::daemon {

namespace {

sigset_t TerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

}  // namespace

std::string Hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

void Setup(const std::string& process, const std::string& log_level) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  log::Setup(process, spdlog::level::from_str(log_level));
  sigset_t signals = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int WaitForTermination() {
  sigset_t signals = TerminationSignals();
  int sig = 0;
  sigwait(&signals, &sig);
  return sig;
}

void RaiseOpenFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  const rlim_t before = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) == 0) {
    log::Logger("main").debug("open files: soft limit raised from {} to {}", before, lim.rlim_cur);
  }
}

void AddLogLevelOption(CLI::App& app, std::string* level) {
  app.add_option("--log-level", *level, "trace, debug, info, warn, error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
}

absl::Status WriteReadyFile(const std::string& path, const std::string& content) {
  if (path.empty()) return absl::OkStatus();
  return WriteFileAtomically(path, content + "\n");
}

absl::StatusOr<absl::Duration> PositiveDuration(const std::string& flag, const std::string& text) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: \"{}\" is not a positive duration (e.g. 15s)", flag, text));
  }
  return d;
}

}  // namespace mkube::daemon
