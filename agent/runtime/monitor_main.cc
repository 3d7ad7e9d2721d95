// mkube-monitor: runs one container process for the agent and outlives it.
//   mkube-monitor [--pause] [--sandbox FILE] EXIT_FILE DIR PROGRAM ARGV0 [ARGS...]
//       (environment: the container's)
// Started by the agent in a session of its own with: 0 the container's stdin, 1-2 its log,
// 3 a pipe to tell the agent the container's pid, 4 a pipe on which the agent says "g" once it
// has recorded that pid. Forks the container (its own process group, killed with its monitor),
// which execs only after the "g", in DIR. Waits for it and writes "<exit code> <signal>" to
// EXIT_FILE (through a temporary file, so a reader never sees half of it), with " OOMKilled"
// after it when the kernel killed it for its memory cgroup's limit, followed by a line saying
// why when the container could not be started at all. The sandbox's cgroups are joined before
// the container runs anything.
//
// With a sandbox (sandbox_spec.h) that isolates, the container gets a PID namespace of its
// own: the process the agent records is its init (pid 1 there: it sets the sandbox up, forks
// the program, reaps what is left behind and reports how the program ended), and the program
// runs as pid 2, so signals reach it as they would outside (a pid 1 ignores those it has no
// handler for). Killing the init ends everything in the container. A sandbox naming a PID
// namespace to join (a pod whose containers share one) puts the program in it instead, with
// no init of its own; --pause starts the process that holds such a namespace (its pid 1,
// which only reaps, and runs nothing).
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "agent/runtime/cri_log.h"
#include "agent/runtime/sandbox_enter.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace {

bool WriteAll(int fd, const std::string& s) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    const ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    left -= static_cast<size_t>(w);
  }
  return true;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[512];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// Tells the monitor why the container could not start ("E" and the reason), and ends.
[[noreturn]] void StartFailed(int fd, const std::string& why) {
  WriteAll(fd, "E" + why);
  _exit(128);
}

// How many processes the kernel has killed in a memory cgroup for its limit (-1: unknown).
long OomKills(const std::string& cgroup) {
  if (cgroup.empty()) return -1;
  std::ifstream in(cgroup + "/memory.oom_control");
  std::string key;
  long value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return -1;
}

// Puts `pid` in each cgroup; the first that fails, with why.
std::string JoinCgroups(const std::vector<std::string>& cgroups, pid_t pid) {
  for (const auto& dir : cgroups) {
    std::ofstream out(dir + "/cgroup.procs");
    out << pid;
    if (!out.flush()) return "cannot join cgroup " + dir + ": " + std::strerror(errno);
  }
  return "";
}

bool LoadSandbox(const char* path, mkube::agent::runtime::SandboxSpec* spec, std::string* error) {
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    *error = std::string("unreadable sandbox ") + path;
    return false;
  }
  return mkube::agent::runtime::SandboxFromJson(j, spec, error);
}

// Execs the program in DIR; on failure says why on `report`.
[[noreturn]] void ExecProgram(int report, const char* dir, const char* program, char** argv) {
  if (chdir(dir) != 0)
    StartFailed(report, std::string("chdir to ") + dir + ": " + std::strerror(errno));
  execve(program, argv, environ);
  StartFailed(report, std::string("exec: \"") + argv[0] + "\": " + std::strerror(errno));
}

// Pid 1 of a pod's shared PID namespace: holds it and reaps its orphans until killed.
[[noreturn]] void HoldPidNamespace(int report) {
  prctl(PR_SET_NAME, "pause");
  signal(SIGCHLD, [](int) {});  // so that pause() returns when there is an orphan to reap
  close(report);                // started: nothing more to say
  for (;;) {
    if (wait(nullptr) < 0 && errno == ECHILD) ::pause();
  }
}

// Pid 1 of the container's PID namespace: forks the program, reaps every process until the
// program ends, then reports its end ("X<code> <signal>") and returns (ending the namespace).
[[noreturn]] void RunAsInit(int report, const char* dir, const char* program, char** argv) {
  prctl(PR_SET_NAME, "mkube-init");
  int started[2];
  if (pipe2(started, O_CLOEXEC) != 0)
    StartFailed(report, std::string("pipe: ") + std::strerror(errno));
  const pid_t child = fork();
  if (child < 0) StartFailed(report, std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    close(report);
    close(started[0]);
    ExecProgram(started[1], dir, program, argv);
  }
  close(started[1]);
  const std::string failure = ReadAll(started[0]);
  close(started[0]);
  if (!failure.empty()) {
    waitpid(child, nullptr, 0);
    WriteAll(report, failure);
    _exit(128);
  }
  int status = 0;
  for (;;) {
    int st = 0;
    const pid_t r = wait(&st);
    if (r < 0 && errno == EINTR) continue;
    if (r == child) {
      status = st;
      break;
    }
    if (r < 0) break;  // cannot happen while the program runs
  }
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + sig;
  WriteAll(report, "X" + std::to_string(code) + " " + std::to_string(sig));
  _exit(code);
}

// The command line: mkube-monitor [--pause] [--sandbox FILE] EXIT_FILE DIR PROGRAM ARGV0 [ARGS...]
struct Args {
  bool pause = false;
  const char* sandbox_file = nullptr;
  std::string exit_path;
  const char* dir = nullptr;
  const char* program = nullptr;
  char** argv = nullptr;  // the program's, ending with a null
};

bool ParseArgs(int argc, char** argv, Args* args) {
  if (argc > 1 && std::strcmp(argv[1], "--pause") == 0) {
    args->pause = true;
    argv += 1;
    argc -= 1;
  }
  if (argc > 2 && std::strcmp(argv[1], "--sandbox") == 0) {
    args->sandbox_file = argv[2];
    argv += 2;
    argc -= 2;
  }
  if (argc < 5) return false;
  args->exit_path = argv[1];
  args->dir = argv[2];
  args->program = argv[3];
  args->argv = argv + 4;
  return true;
}

// The container's PID namespace: the next child is its pid 1 (true); or the pod's, joined.
// What fails is said in `error`.
bool SetUpPidNamespace(const mkube::agent::runtime::SandboxSpec& spec, bool loaded,
                       std::string* error) {
  const bool own_pid_ns = loaded && spec.isolated && spec.join_pid_ns.empty();
  if (own_pid_ns && unshare(CLONE_NEWPID) != 0) {
    *error = std::string("unshare a PID namespace: ") + std::strerror(errno);
  }
  if (loaded && spec.isolated && !spec.join_pid_ns.empty()) {
    const int ns = open(spec.join_pid_ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWPID) != 0) {
      *error = "join the pod's PID namespace " + spec.join_pid_ns + ": " + std::strerror(errno);
    }
    if (ns >= 0) close(ns);
  }
  return own_pid_ns;
}

// The container's process, forked: waits for the agent's "g", then sets the sandbox up and
// runs the program (or holds the pod's PID namespace), telling `report` why when it cannot.
[[noreturn]] void RunContainer(const Args& args, const mkube::agent::runtime::SandboxSpec& spec,
                               const std::string& load_error, bool own_pid_ns, pid_t monitor,
                               int report) {
  close(3);
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != monitor && !spec.isolated) _exit(127);
  char go = 0;
  ssize_t n;
  while ((n = read(4, &go, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1 || go != 'g') _exit(126);  // the agent went away before recording it
  close(4);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (!load_error.empty()) StartFailed(report, "cannot set up the container: " + load_error);
  std::string error;
  if (args.sandbox_file && !mkube::agent::runtime::EnterSandbox(spec, &error)) {
    StartFailed(report, "cannot set up the container: " + error);
  }
  if (args.pause) HoldPidNamespace(report);
  if (own_pid_ns) RunAsInit(report, args.dir, args.program, args.argv);
  ExecProgram(report, args.dir, args.program, args.argv);
}

int64_t NowNanos() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Reads what waits on `fd` into the log (fd 1) as entries of `stream`; false at its end.
bool CopyOut(int fd, const char* stream) {
  char buf[64 * 1024];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return false;
  WriteAll(1, mkube::agent::runtime::crilog::Entries(std::string_view(buf, static_cast<size_t>(n)),
                                                     stream, NowNanos()));
  return true;
}

// Copies the container's output to the log until `child` ends; then what it left in the
// pipes (not waiting for processes it left behind that still hold them). Its wait status.
int WaitCopying(pid_t child, int out, int err, int sigfd) {
  pollfd fds[3] = {{sigfd, POLLIN, 0}, {out, POLLIN, 0}, {err, POLLIN, 0}};
  const char* streams[3] = {nullptr, "stdout", "stderr"};
  int status = 0;
  bool reaped = false;
  while (!reaped) {
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;  // cannot happen with these descriptors; the wait below still tells how it ended
    }
    for (int i = 1; i < 3; ++i) {
      if (fds[i].revents != 0 && !CopyOut(fds[i].fd, streams[i])) fds[i].fd = -1;
    }
    if (fds[0].revents != 0) {
      signalfd_siginfo info;
      while (read(sigfd, &info, sizeof info) < 0 && errno == EINTR) {
      }
      reaped = waitpid(child, &status, WNOHANG) == child;
    }
  }
  while (!reaped && waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  for (int i = 1; i < 3; ++i) {
    if (fds[i].fd < 0) continue;
    fcntl(fds[i].fd, F_SETFL, O_NONBLOCK);
    while (CopyOut(fds[i].fd, streams[i])) {
    }
  }
  return status;
}

// "<exit code> <signal>[ OOMKilled]", then why it could not start, if it could not, written
// through a temporary file so that a reader never sees half of it.
void WriteExitRecord(const std::string& exit_path, int code, int sig, bool oom,
                     const std::string& failure) {
  const std::string tmp = exit_path + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%d %d%s\n", code, sig, oom ? " OOMKilled" : "");
    if (!failure.empty()) std::fprintf(f, "%s\n", failure.c_str());
    std::fclose(f);
    std::rename(tmp.c_str(), exit_path.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Nothing in this process is worth reading, but /proc/<pid>/root of a root process leads to
  // the node's files: only the node's root may look.
  prctl(PR_SET_DUMPABLE, 0);
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: mkube-monitor [--pause] [--sandbox FILE] EXIT_FILE DIR PROGRAM ARGV0 "
                 "[ARGS...]\n");
    return 2;
  }
  mkube::agent::runtime::SandboxSpec spec;
  std::string load_error;
  const bool loaded = !args.sandbox_file || LoadSandbox(args.sandbox_file, &spec, &load_error);
  const bool own_pid_ns = SetUpPidNamespace(spec, loaded, &load_error);
  int report[2], out[2], err[2];
  if (pipe2(report, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return 1;
  }
  // The container's end is noticed on a descriptor, beside its output.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  const int sigfd = signalfd(-1, &chld, SFD_CLOEXEC);
  if (sigfd < 0) return 1;
  const pid_t self = getpid();
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(report[0]);
    dup2(out[1], 1);
    dup2(err[1], 2);
    RunContainer(args, spec, load_error, own_pid_ns, self, report[1]);
  }
  close(report[1]);
  close(out[1]);
  close(err[1]);
  setpgid(child, child);
  // Held to its limits before it runs anything: the agent's "g" comes only after the pid.
  std::string failure = JoinCgroups(spec.cgroups, child);
  if (!failure.empty()) kill(child, SIGKILL);
  const long oom_before = OomKills(spec.memory_cgroup);
  close(4);
  WriteAll(3, std::string(reinterpret_cast<const char*>(&child), sizeof child));
  close(3);
  const int status = WaitCopying(child, out[0], err[0], sigfd);
  // How it ended, as its init reports it, or why it could not start (the pipe is closed by
  // now: at the exec, or by the process that has ended).
  fcntl(report[0], F_SETFL, O_NONBLOCK);
  const std::string said = ReadAll(report[0]);
  close(report[0]);
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + sig;
  if (!said.empty() && said[0] == 'X') {
    std::sscanf(said.c_str() + 1, "%d %d", &code, &sig);
  } else if (!said.empty() && said[0] == 'E') {
    failure = said.substr(1);
  }
  // Failed, and the kernel's count of OOM kills in its memory cgroup went up: its limit did it.
  const bool oom = code != 0 && oom_before >= 0 && OomKills(spec.memory_cgroup) > oom_before;
  WriteExitRecord(args.exit_path, code, sig, oom, failure);
  // Without exit handlers: its stderr is the container's log, and nothing of this process is
  // left to clean up (a leak checker in a sanitized build could not inspect a process that
  // is not dumpable, and would say so in that log).
  _exit(0);
}
