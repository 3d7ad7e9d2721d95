#include "agent/runtime/container_exec.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/runtime/process.h"
#include "agent/runtime/sandbox_enter.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::runtime {
namespace {

// What the child reports when it cannot run the command.
struct Failure {
  enum Stage : int { kJoin = 1, kChdir, kIdentity, kNotFound, kExec } stage;
  int err;
};

// In a child that joined the container's mount namespace: the terminal, a device of the
// node's /dev/pts cloned beforehand as a detached mount (`tree`, from open_tree), is shown at
// the same path inside, in a copy of the container's mounts of this process's own (so the
// container sees nothing of it). System calls only.
bool ShowTerminal(int tree, const char* path) {
  if (unshare(CLONE_NEWNS) != 0) return false;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  if (mount("tmpfs", "/dev/pts", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=4k") != 0) {
    return false;
  }
  const int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  close(fd);
  return syscall(SYS_move_mount, tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) == 0;
}

[[noreturn]] void Fail(int fd, Failure::Stage stage, int err) {
  const Failure f{stage, err};
  (void)!write(fd, &f, sizeof f);
  _exit(127);
}

// Everything the child needs, made before fork: after it, the child only makes system calls.
struct PreparedExec {
  ContainerNamespaces ns;
  PreparedIdentity identity;
  std::string dir, tty_path;
  std::vector<std::string> cgroup_procs;
  std::vector<std::string> candidates;  // where argv[0] may be
  std::vector<std::string> args, env;
  std::vector<char*> cargv, cenv;  // into args and env
};

absl::Status PrepareExec(const ExecTarget& target, const std::vector<std::string>& argv,
                         const StdFds& fds, PreparedExec* p) {
  if (target.isolated) {
    p->ns = OpenNamespaces(target.pid);
    if (p->ns.mnt < 0) {
      p->ns.Close();
      return absl::FailedPreconditionError("container not found (its process is gone)");
    }
  }
  p->identity = PrepareIdentity(target.identity);
  p->dir = target.dir;
  p->tty_path = fds.tty_path;
  for (const auto& dir : target.cgroups) p->cgroup_procs.push_back(dir + "/cgroup.procs");
  p->candidates = PathCandidates(argv[0], target.env);
  p->args = argv;
  p->env = target.env;
  for (auto& a : p->args) p->cargv.push_back(a.data());
  p->cargv.push_back(nullptr);
  for (auto& e : p->env) p->cenv.push_back(e.data());
  p->cenv.push_back(nullptr);
  return absl::OkStatus();
}

// In the child: joins the container's cgroups and namespaces, keeping only 0-2, the report
// (as 3) and the terminal's mount (as 4, in `*tree`) open; the report's descriptor.
int JoinContainer(const PreparedExec& p, const StdFds& fds, int report, int* tree) {
  const char* step = nullptr;
  // Held to the container's limits with it, and counted as its (what it forks too).
  for (const auto& procs : p.cgroup_procs) {
    const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) Fail(report, Failure::kJoin, errno);
    close(fd);
  }
  // The terminal, taken while the node's /dev/pts is still in view.
  if (fds.tty && p.ns.mnt >= 0 && !p.tty_path.empty()) {
    *tree = static_cast<int>(
        syscall(SYS_open_tree, AT_FDCWD, p.tty_path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (*tree < 0) Fail(report, Failure::kJoin, errno);
  }
  if (!JoinNamespaces(p.ns, &step)) Fail(report, Failure::kJoin, errno);
  // Nothing but 0-2, the report (as 3) and the terminal's mount (as 4) stays open: the
  // agent's other descriptors would otherwise be held by the process that waits below,
  // which never execs (a pipe's write end kept open there means no end of input for the
  // command).
  int out = report;
  if (out != 3) out = dup3(report, 3, O_CLOEXEC) < 0 ? report : 3;
  if (*tree >= 0 && *tree != 4) *tree = dup3(*tree, 4, O_CLOEXEC) < 0 ? *tree : 4;
  if (out == 3 && (*tree < 0 || *tree == 4)) syscall(SYS_close_range, 5u, ~0u, 0u);
  return out;
}

// In the child, with the container's PID namespace to enter: only a child enters it, so this
// process forks one, waits for it and ends as it does (signals to the group reach both);
// returns in that child.
void EnterPidNamespace(bool tty, int out) {
  const pid_t inner = fork();
  if (inner < 0) Fail(out, Failure::kJoin, errno);
  if (inner > 0) {
    close(out);
    int st = 0;
    while (waitpid(inner, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st)) {
      signal(WTERMSIG(st), SIG_DFL);
      kill(getpid(), WTERMSIG(st));
    }
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128);
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (tty) {
    // The terminal's session is led from inside, so a shell's job control finds its
    // process groups there.
    setsid();
    ioctl(0, TIOCSCTTY, 1);
  }
}

// The forked child: its descriptors, the container, then the command (or a report of why
// not, on `report`).
[[noreturn]] void RunInContainer(const PreparedExec& p, const StdFds& fds, int report,
                                 pid_t parent) {
  PrepareChild(parent, /*own_session=*/fds.tty);
  if (fds.tty) ioctl(fds.in, TIOCSCTTY, 0);
  dup2(fds.in, 0);
  dup2(fds.out, 1);
  dup2(fds.err, 2);
  int tree = -1;
  const int out = JoinContainer(p, fds, report, &tree);
  if (p.ns.pid >= 0) EnterPidNamespace(fds.tty, out);
  // Now in the container's PID namespace too, so its /proc knows this process.
  if (tree >= 0 && !ShowTerminal(tree, p.tty_path.c_str())) Fail(out, Failure::kJoin, errno);
  if (chdir(p.dir.c_str()) != 0) Fail(out, Failure::kChdir, errno);
  const char* step = nullptr;
  if (!ApplyIdentity(p.identity, &step)) Fail(out, Failure::kIdentity, errno);
  int err = ENOENT;
  for (const auto& c : p.candidates) {
    execve(c.c_str(), p.cargv.data(), p.cenv.data());
    if (errno != ENOENT && errno != ENOTDIR) err = errno;
  }
  Fail(out, err == ENOENT ? Failure::kNotFound : Failure::kExec, err);
}

// Why the command could not be run, in the runtime's words.
absl::Status FailureStatus(const Failure& f, const std::string& name, const std::string& dir) {
  switch (f.stage) {
    case Failure::kNotFound:
      if (name.find('/') != std::string::npos) {
        return absl::NotFoundError(
            fmt::format("exec: \"{}\": stat {}: no such file or directory", name, name));
      }
      return absl::NotFoundError(
          fmt::format("exec: \"{}\": executable file not found in $PATH", name));
    case Failure::kExec:
      return absl::FailedPreconditionError(
          fmt::format("exec: \"{}\": {}", name, std::strerror(f.err)));
    case Failure::kJoin:
      return absl::InternalError(
          fmt::format("joining the container's namespaces: {}", std::strerror(f.err)));
    case Failure::kChdir:
      return absl::FailedPreconditionError(
          fmt::format("chdir to {}: {}", dir, std::strerror(f.err)));
    case Failure::kIdentity:
      return absl::InternalError(
          fmt::format("taking on the container's user: {}", std::strerror(f.err)));
  }
  return absl::InternalError("the command could not be started");
}

}  // namespace

absl::StatusOr<pid_t> SpawnInContainer(const ExecTarget& target,
                                       const std::vector<std::string>& argv, const StdFds& fds) {
  if (argv.empty() || argv[0].empty()) return absl::InvalidArgumentError("empty command");
  PreparedExec p;
  MKUBE_RETURN_IF_ERROR(PrepareExec(target, argv, fds, &p));
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    p.ns.Close();
    return absl::InternalError(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    p.ns.Close();
    close(report[0]);
    close(report[1]);
    return absl::InternalError(fmt::format("fork: {}", std::strerror(err)));
  }
  if (pid == 0) RunInContainer(p, fds, report[1], parent);
  if (!fds.tty) setpgid(pid, pid);
  p.ns.Close();
  close(report[1]);
  Failure f{};
  ssize_t n;
  while ((n = read(report[0], &f, sizeof f)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n != static_cast<ssize_t>(sizeof f)) return pid;  // closed by a successful exec
  waitpid(pid, nullptr, 0);
  return FailureStatus(f, argv[0], target.dir);
}

}  // namespace mkube::agent::runtime
