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

}  // namespace

absl::StatusOr<pid_t> SpawnInContainer(const ExecTarget& target,
                                       const std::vector<std::string>& argv, const StdFds& fds) {
  if (argv.empty() || argv[0].empty()) return absl::InvalidArgumentError("empty command");
  // Everything the child needs is made here: after fork it only makes system calls.
  ContainerNamespaces ns;
  if (target.isolated) {
    ns = OpenNamespaces(target.pid);
    if (ns.mnt < 0) {
      ns.Close();
      return absl::FailedPreconditionError("container not found (its process is gone)");
    }
  }
  const PreparedIdentity identity = Prepare(target.identity);
  const std::string tty_path = fds.tty_path;
  std::vector<std::string> cgroup_procs;
  for (const auto& dir : target.cgroups) cgroup_procs.push_back(dir + "/cgroup.procs");
  std::vector<std::string> candidates = PathCandidates(argv[0], target.env);
  std::vector<std::string> args = argv, env = target.env;
  std::vector<char*> cargv, cenv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    ns.Close();
    return absl::InternalError(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    ns.Close();
    close(report[0]);
    close(report[1]);
    return absl::InternalError(fmt::format("fork: {}", std::strerror(err)));
  }
  if (pid == 0) {
    PrepareChild(parent, /*own_session=*/fds.tty);
    if (fds.tty) ioctl(fds.in, TIOCSCTTY, 0);
    dup2(fds.in, 0);
    dup2(fds.out, 1);
    dup2(fds.err, 2);
    const char* step = nullptr;
    // Held to the container's limits with it, and counted as its (what it forks too).
    for (const auto& procs : cgroup_procs) {
      const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write(fd, "0", 1) != 1) Fail(report[1], Failure::kJoin, errno);
      close(fd);
    }
    // The terminal, taken while the node's /dev/pts is still in view.
    int tree = -1;
    if (fds.tty && ns.mnt >= 0 && !tty_path.empty()) {
      tree = static_cast<int>(
          syscall(SYS_open_tree, AT_FDCWD, tty_path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
      if (tree < 0) Fail(report[1], Failure::kJoin, errno);
    }
    if (!JoinNamespaces(ns, &step)) Fail(report[1], Failure::kJoin, errno);
    // Nothing but 0-2, the report (as 3) and the terminal's mount (as 4) stays open: the
    // agent's other descriptors would otherwise be held by the process that waits below,
    // which never execs (a pipe's write end kept open there means no end of input for the
    // command).
    int out = report[1];
    if (out != 3) out = dup3(report[1], 3, O_CLOEXEC) < 0 ? report[1] : 3;
    if (tree >= 0 && tree != 4) tree = dup3(tree, 4, O_CLOEXEC) < 0 ? tree : 4;
    if (out == 3 && (tree < 0 || tree == 4)) syscall(SYS_close_range, 5u, ~0u, 0u);
    if (ns.pid >= 0) {
      // Only a child enters the container's PID namespace: this process waits for it and
      // ends as it does (signals to the group reach both).
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
      if (fds.tty) {
        // The terminal's session is led from inside, so a shell's job control finds its
        // process groups there.
        setsid();
        ioctl(0, TIOCSCTTY, 1);
      }
    }
    // Now in the container's PID namespace too, so its /proc knows this process.
    if (tree >= 0 && !ShowTerminal(tree, tty_path.c_str())) Fail(out, Failure::kJoin, errno);
    if (chdir(target.dir.c_str()) != 0) Fail(out, Failure::kChdir, errno);
    if (!ApplyIdentity(identity, &step)) Fail(out, Failure::kIdentity, errno);
    int err = ENOENT;
    for (const auto& c : candidates) {
      execve(c.c_str(), cargv.data(), cenv.data());
      if (errno != ENOENT && errno != ENOTDIR) err = errno;
    }
    Fail(out, err == ENOENT ? Failure::kNotFound : Failure::kExec, err);
  }
  if (!fds.tty) setpgid(pid, pid);
  ns.Close();
  close(report[1]);
  Failure f{};
  ssize_t n;
  while ((n = read(report[0], &f, sizeof f)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n != static_cast<ssize_t>(sizeof f)) return pid;  // closed by a successful exec
  waitpid(pid, nullptr, 0);
  const std::string& name = argv[0];
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
          fmt::format("chdir to {}: {}", target.dir, std::strerror(f.err)));
    case Failure::kIdentity:
      return absl::InternalError(
          fmt::format("taking on the container's user: {}", std::strerror(f.err)));
  }
  return absl::InternalError("the command could not be started");
}

}  // namespace mkube::agent::runtime
