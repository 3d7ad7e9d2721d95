#include "agent/runtime/process_runner.h"

#include <signal.h>

#include <cerrno>

namespace mkube::agent::runtime {
namespace {

class MonitoredRunner final : public ProcessRunner {
 public:
  explicit MonitoredRunner(std::string monitor_path) : monitor_path_(std::move(monitor_path)) {}

  absl::StatusOr<ProcessRecord> Start(const ProcessSpec& spec, const std::string& record_path,
                                      const std::string& exit_path) override {
    return StartMonitored(monitor_path_, spec, record_path, exit_path);
  }
  absl::StatusOr<ProcessRecord> ReadRecord(const std::string& record_path) override {
    return runtime::ReadRecord(record_path);
  }
  std::optional<ExitInfo> ReadExit(const std::string& exit_path) override {
    return ReadExitRecord(exit_path);
  }
  bool Alive(const ProcessRecord& record) override { return runtime::Alive(record); }
  bool MonitorGone(pid_t monitor, bool adopted) override {
    // A monitor started by an earlier agent is not our child: it can only be looked for.
    if (adopted) return kill(monitor, 0) != 0 && errno == ESRCH;
    return ReapMonitor(monitor);
  }
  void Signal(pid_t pid, int sig) override { SignalGroup(pid, sig); }

 private:
  const std::string monitor_path_;
};

}  // namespace

ProcessRunnerPtr NewProcessRunner(std::string monitor_path) {
  return std::make_unique<MonitoredRunner>(std::move(monitor_path));
}

}  // namespace mkube::agent::runtime
