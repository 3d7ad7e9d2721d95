#pragma once

#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "agent/runtime/process_runner.h"

namespace mkube::agent::testing {

// Processes that exist only in memory: each Start makes one that runs until the test ends it
// (Exit) or a signal does (SIGKILL always; SIGTERM unless told to ignore it). Containers are
// named by their record's folder (.../logs/<container>/<n>.pid), as the pod workers lay
// them out.
class FakeProcessRunner final : public runtime::ProcessRunner {
 public:
  struct Proc {
    runtime::ProcessRecord record;
    std::string container;
    std::string exit_path;
    runtime::ProcessSpec spec;
    bool running = true;
    runtime::ExitInfo exit;
    std::vector<int> signals;
  };

  absl::StatusOr<runtime::ProcessRecord> Start(const runtime::ProcessSpec& spec,
                                               const std::string& record_path,
                                               const std::string& exit_path) override {
    absl::MutexLock lock(&mu_);
    if (!fail_start_.empty()) return absl::NotFoundError(fail_start_);
    Proc p;
    p.record.pid = next_pid_++;
    p.record.monitor = next_pid_++;
    p.record.start_ticks = p.record.pid;
    p.record.env = spec.env;
    p.record.dir = spec.dir;
    p.container = ContainerOf(record_path);
    p.exit_path = exit_path;
    p.spec = spec;
    records_[record_path] = p.record;
    procs_[p.record.pid] = p;
    return p.record;
  }
  absl::StatusOr<runtime::ProcessRecord> ReadRecord(const std::string& record_path) override {
    absl::MutexLock lock(&mu_);
    auto it = records_.find(record_path);
    if (it == records_.end()) return absl::NotFoundError(record_path);
    return it->second;
  }
  std::optional<runtime::ExitInfo> ReadExit(const std::string& exit_path) override {
    absl::MutexLock lock(&mu_);
    for (const auto& [pid, p] : procs_) {
      if (p.exit_path == exit_path && !p.running) return p.exit;
    }
    return std::nullopt;
  }
  bool Alive(const runtime::ProcessRecord& record) override {
    absl::MutexLock lock(&mu_);
    auto it = procs_.find(record.pid);
    return it != procs_.end() && it->second.running;
  }
  bool MonitorGone(pid_t monitor, bool adopted) override {
    absl::MutexLock lock(&mu_);
    for (const auto& [pid, p] : procs_) {
      if (p.record.monitor == monitor) return !p.running;
    }
    return true;
  }
  void Signal(pid_t pid, int sig) override {
    absl::MutexLock lock(&mu_);
    auto it = procs_.find(pid);
    if (it == procs_.end()) return;
    it->second.signals.push_back(sig);
    if (it->second.running && (sig == SIGKILL || (sig == SIGTERM && !ignore_term_))) {
      it->second.running = false;
      it->second.exit = runtime::ExitInfo{128 + sig, sig};
    }
  }

  // The test's side.
  // Ends the running instance of `container` with `code`; false if none runs.
  bool Exit(const std::string& container, int code) {
    absl::MutexLock lock(&mu_);
    for (auto& [pid, p] : procs_) {
      if (p.container == container && p.running) {
        p.running = false;
        p.exit = runtime::ExitInfo{code, 0};
        return true;
      }
    }
    return false;
  }
  // How many instances of `container` were started, and how many run now.
  int Starts(const std::string& container) const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const auto& [pid, p] : procs_) n += p.container == container;
    return n;
  }
  int Running(const std::string& container) const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const auto& [pid, p] : procs_) n += p.container == container && p.running;
    return n;
  }
  // The signals sent to the newest instance of `container`.
  std::vector<int> Signals(const std::string& container) const {
    absl::MutexLock lock(&mu_);
    std::vector<int> out;
    pid_t newest = 0;
    for (const auto& [pid, p] : procs_) {
      if (p.container == container && pid > newest) {
        newest = pid;
        out = p.signals;
      }
    }
    return out;
  }
  // A process left running by an agent that ran before: recorded at record_path.
  void Preexisting(const std::string& record_path, const std::string& exit_path) {
    absl::MutexLock lock(&mu_);
    Proc p;
    p.record.pid = next_pid_++;
    p.record.monitor = next_pid_++;
    p.container = ContainerOf(record_path);
    p.exit_path = exit_path;
    records_[record_path] = p.record;
    procs_[p.record.pid] = p;
  }
  void IgnoreSigterm(bool ignore) {
    absl::MutexLock lock(&mu_);
    ignore_term_ = ignore;
  }
  void FailStarts(std::string why) {
    absl::MutexLock lock(&mu_);
    fail_start_ = std::move(why);
  }

 private:
  static std::string ContainerOf(const std::string& record_path) {
    const size_t end = record_path.rfind('/');
    const size_t begin = record_path.rfind('/', end - 1);
    return record_path.substr(begin + 1, end - begin - 1);
  }

  mutable absl::Mutex mu_;
  pid_t next_pid_ ABSL_GUARDED_BY(mu_) = 1000;
  std::map<std::string, runtime::ProcessRecord> records_ ABSL_GUARDED_BY(mu_);
  std::map<pid_t, Proc> procs_ ABSL_GUARDED_BY(mu_);
  bool ignore_term_ ABSL_GUARDED_BY(mu_) = false;
  std::string fail_start_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mkube::agent::testing
