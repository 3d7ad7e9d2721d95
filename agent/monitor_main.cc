// mkube-monitor: runs one container process for the agent and outlives it.
//   mkube-monitor EXIT_FILE DIR PROGRAM ARGV0 [ARGS...]     (environment: the container's)
// Started by the agent in a session of its own with: 0-2 the container's stdin/stdout/stderr,
// 3 a pipe to tell the agent the container's pid, 4 a pipe on which the agent says "g" once it
// has recorded that pid. Forks the container (its own process group, killed with its monitor),
// which execs only after the "g"; then waits for it and writes "<exit code> <signal>" to
// EXIT_FILE (through a temporary file, so a reader never sees half of it).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: mkube-monitor EXIT_FILE DIR PROGRAM ARGV0 [ARGS...]\n");
    return 2;
  }
  const std::string exit_path = argv[1];
  const char* dir = argv[2];
  const char* program = argv[3];
  const pid_t self = getpid();
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(3);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != self) _exit(127);
    char go = 0;
    ssize_t n;
    while ((n = read(4, &go, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1 || go != 'g') _exit(126);  // the agent went away before recording it
    close(4);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (chdir(dir) != 0) _exit(126);
    execve(program, argv + 4, environ);
    _exit(127);
  }
  setpgid(child, child);
  close(4);
  const char* p = reinterpret_cast<const char*>(&child);
  size_t left = sizeof child;
  while (left > 0) {
    const ssize_t w = write(3, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    p += w;
    left -= static_cast<size_t>(w);
  }
  close(3);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + sig;
  const std::string tmp = exit_path + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%d %d\n", code, sig);
    std::fclose(f);
    std::rename(tmp.c_str(), exit_path.c_str());
  }
  return 0;
}
