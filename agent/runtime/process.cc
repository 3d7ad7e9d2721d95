#include "agent/runtime/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "base/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace mkube::agent::runtime {

absl::StatusOr<std::string> ResolveExecutable(const std::string& name,
                                              const std::vector<std::string>& env) {
  if (name.empty()) return absl::InvalidArgumentError("empty command");
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) != 0) {
      return absl::NotFoundError(fmt::format("exec: \"{}\": {}", name, std::strerror(errno)));
    }
    return name;
  }
  for (const auto& candidate : PathCandidates(name, env)) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(fmt::format("exec: \"{}\": executable file not found in $PATH", name));
}

std::vector<std::string> PathCandidates(const std::string& name,
                                        const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return {name};
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  }
  std::vector<std::string> out;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    out.push_back(fmt::format("{}/{}", std::string(dir), name));
  }
  return out;
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

namespace {

std::optional<int64_t> StartTicks(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  // Fields after the command (which may hold spaces) start past its closing parenthesis;
  // starttime is the 22nd field, the 20th after it.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 2), ' ');
  int64_t ticks = 0;
  if (fields.size() < 20 || !absl::SimpleAtoi(fields[19], &ticks)) return std::nullopt;
  return ticks;
}

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

absl::Status WriteRecord(const std::string& path, const ProcessRecord& r) {
  nlohmann::json j = {{"pid", r.pid},
                      {"monitor", r.monitor},
                      {"startTicks", r.start_ticks},
                      {"started", r.started_unix},
                      {"env", r.env},
                      {"dir", r.dir},
                      {"isolated", r.isolated},
                      {"identity", ToJson(r.identity)},
                      {"cgroups", r.cgroups}};
  return WriteFileAtomically(path, j.dump() + "\n");
}

absl::StatusOr<ProcessRecord> ReadRecord(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(fmt::format("no record {}", path));
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j["pid"].is_number_integer() ||
      !j["monitor"].is_number_integer() || !j["startTicks"].is_number_integer() ||
      !j["started"].is_number_integer() || !j["env"].is_array() || !j["dir"].is_string()) {
    return absl::DataLossError(fmt::format("unreadable record {}", path));
  }
  ProcessRecord r;
  r.pid = j["pid"].get<pid_t>();
  r.monitor = j["monitor"].get<pid_t>();
  r.start_ticks = j["startTicks"].get<int64_t>();
  r.started_unix = j["started"].get<int64_t>();
  for (const auto& e : j["env"]) {
    if (e.is_string()) r.env.push_back(e.get<std::string>());
  }
  r.dir = j["dir"].get<std::string>();
  r.isolated = j.value("isolated", false);
  if (j.contains("identity")) r.identity = IdentityFromJson(j["identity"]);
  r.cgroups = j.value("cgroups", std::vector<std::string>{});
  return r;
}

std::string DefaultMonitorPath() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "mkube-monitor";
  self[n] = '\0';
  return (std::filesystem::path(self).parent_path() / "mkube-monitor").string();
}

namespace {

// The monitor's command line: [--pause] [--sandbox FILE] EXIT_FILE DIR PROGRAM ARGV...
std::vector<std::string> MonitorArgs(const std::string& monitor_path, const ProcessSpec& spec,
                                     const std::string& program, const std::string& sandbox_path,
                                     const std::string& exit_path) {
  std::vector<std::string> args = {monitor_path};
  if (spec.pause) args.push_back("--pause");
  if (!sandbox_path.empty()) args.insert(args.end(), {"--sandbox", sandbox_path});
  args.insert(args.end(), {exit_path, spec.dir, program});
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  return args;
}

// Spawns the monitor (no copy of this process's memory, none of its descriptors beyond
// these five), in a session of its own so it outlives the agent: its 1 and 2 the log, 3 the
// pipe it says the container's pid on, 4 the one it waits for the go on. An errno on failure.
int SpawnMonitor(const std::string& monitor_path, std::vector<std::string> args,
                 const std::vector<std::string>& env, int log_fd, int pid_w, int go_r,
                 pid_t* monitor) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, log_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
  posix_spawn_file_actions_adddup2(&fa, pid_w, 3);
  posix_spawn_file_actions_adddup2(&fa, go_r, 4);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int err = posix_spawn(monitor, monitor_path.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return err;
}

// The container's pid, as its monitor says it on `fd` (0 when it does not).
pid_t ReadChildPid(int fd) {
  pid_t child = 0;
  size_t got = 0;
  while (got < sizeof child) {
    const ssize_t n = read(fd, reinterpret_cast<char*>(&child) + got, sizeof child - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got == sizeof child ? child : 0;
}

ProcessRecord RecordOf(const ProcessSpec& spec, pid_t child, pid_t monitor) {
  ProcessRecord r;
  r.pid = child;
  r.monitor = monitor;
  r.start_ticks = StartTicks(child).value_or(0);
  r.started_unix = absl::ToUnixSeconds(absl::Now());
  r.env = spec.env;
  r.dir = spec.dir;
  r.isolated = spec.sandbox.isolated;
  r.identity = spec.sandbox.identity;
  r.cgroups = spec.sandbox.cgroups;
  return r;
}

}  // namespace

absl::StatusOr<ProcessRecord> StartMonitored(const std::string& monitor_path,
                                             const ProcessSpec& spec,
                                             const std::string& record_path,
                                             const std::string& exit_path) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("no command specified");
  MKUBE_ASSIGN_OR_RETURN(auto exe, spec.program.empty() && !spec.pause
                                       ? ResolveExecutable(spec.argv[0], spec.env)
                                       : absl::StatusOr<std::string>(spec.program));
  const Identity& id = spec.sandbox.identity;
  const bool sandboxed = spec.sandbox.isolated || id.uid >= 0 || id.gid >= 0 ||
                         id.limit_capabilities || id.no_new_privs || !spec.sandbox.cgroups.empty();
  const std::string sandbox_path = sandboxed ? record_path + ".sandbox.json" : "";
  if (sandboxed) {
    std::ofstream out(sandbox_path, std::ios::trunc);
    out << ToJson(spec.sandbox).dump() << "\n";
    if (!out.flush()) return absl::InternalError(fmt::format("cannot write {}", sandbox_path));
  }
  const int log_fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::InternalError(fmt::format("open {}: {}", spec.log_path, std::strerror(errno)));
  }
  int pid_pipe[2] = {-1, -1}, go_pipe[2] = {-1, -1};
  if (pipe2(pid_pipe, O_CLOEXEC) != 0 || pipe2(go_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    for (int fd : {log_fd, pid_pipe[0], pid_pipe[1], go_pipe[0], go_pipe[1]}) {
      if (fd >= 0) close(fd);
    }
    return absl::InternalError(fmt::format("pipe: {}", std::strerror(err)));
  }
  pid_t monitor = -1;
  const int err =
      SpawnMonitor(monitor_path, MonitorArgs(monitor_path, spec, exe, sandbox_path, exit_path),
                   spec.env, log_fd, pid_pipe[1], go_pipe[0], &monitor);
  close(pid_pipe[1]);
  close(go_pipe[0]);
  close(log_fd);
  if (err != 0) {
    close(pid_pipe[0]);
    close(go_pipe[1]);
    return absl::InternalError(fmt::format("spawn {}: {}", monitor_path, std::strerror(err)));
  }
  const pid_t child = ReadChildPid(pid_pipe[0]);
  close(pid_pipe[0]);
  auto fail = [&](const std::string& why) {
    close(go_pipe[1]);  // the container sees no go and exits; its monitor follows at once
    waitpid(monitor, nullptr, 0);
    return absl::InternalError(why);
  };
  if (child <= 0) return fail("the container's monitor did not start it");
  ProcessRecord r = RecordOf(spec, child, monitor);
  if (auto st = WriteRecord(record_path, r); !st.ok()) return fail(std::string(st.message()));
  const char go = 'g';
  WriteAll(go_pipe[1], &go, 1);
  close(go_pipe[1]);
  return r;
}

std::optional<ExitInfo> ReadExitRecord(const std::string& path) {
  std::ifstream in(path);
  ExitInfo info;
  if (!(in >> info.exit_code >> info.signal)) return std::nullopt;
  std::string rest;
  std::getline(in, rest);  // the first line's end: a reason, if any
  info.reason = std::string(absl::StripAsciiWhitespace(rest));
  std::getline(in, info.message);
  return info;
}

bool Alive(const ProcessRecord& r) {
  if (r.pid <= 0) return false;
  auto ticks = StartTicks(r.pid);
  return ticks && *ticks == r.start_ticks;
}

bool ReapMonitor(pid_t monitor) {
  if (monitor <= 0) return true;
  const pid_t r = waitpid(monitor, nullptr, WNOHANG);
  return r == monitor || (r < 0 && errno == ECHILD);
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

void SignalGroup(pid_t pid, int sig) {
  if (pid > 0) kill(-pid, sig);
}

}  // namespace mkube::agent::runtime
