#include "agent/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace mkube::agent {

absl::StatusOr<std::string> ResolveExecutable(const std::string& name,
                                              const std::vector<std::string>& env) {
  if (name.empty()) return absl::InvalidArgumentError("empty command");
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) != 0) {
      return absl::NotFoundError(fmt::format("exec: \"{}\": {}", name, std::strerror(errno)));
    }
    return name;
  }
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  }
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = fmt::format("{}/{}", std::string(dir), name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(
      fmt::format("exec: \"{}\": executable file not found in $PATH", name));
}

void PrepareChild(pid_t parent, bool own_session) {
  if (own_session) {
    setsid();
  } else {
    setpgid(0, 0);
  }
  // The agent does not adopt processes across its own restarts yet: what it started goes
  // with it rather than being left behind unmanaged.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

absl::StatusOr<pid_t> StartProcess(const ProcessSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("no command specified");
  auto exe = ResolveExecutable(spec.argv[0], spec.env);
  if (!exe.ok()) return exe.status();
  const int log_fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::InternalError(fmt::format("open {}: {}", spec.log_path, std::strerror(errno)));
  }
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return absl::InternalError(fmt::format("fork: {}", std::strerror(err)));
  }
  if (pid == 0) {
    // Only async-signal-safe calls from here on.
    PrepareChild(parent, /*own_session=*/false);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    if (chdir(spec.dir.c_str()) != 0) _exit(126);
    execve(exe->c_str(), argv.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also from here, so the group exists before anyone signals it
  close(log_fd);
  if (null_fd >= 0) close(null_fd);
  return pid;
}

ExitInfo ExitFromWaitStatus(int status) {
  ExitInfo info;
  if (WIFEXITED(status)) {
    info.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
    info.exit_code = 128 + info.signal;
  }
  return info;
}

std::optional<ExitInfo> TryReap(pid_t pid) {
  int status = 0;
  const pid_t r = waitpid(pid, &status, WNOHANG);
  if (r == pid) return ExitFromWaitStatus(status);
  if (r < 0 && errno == ECHILD) return ExitInfo{.exit_code = 137, .signal = SIGKILL};
  return std::nullopt;
}

void SignalGroup(pid_t pid, int sig) {
  if (pid > 0) kill(-pid, sig);
}

}  // namespace mkube::agent
