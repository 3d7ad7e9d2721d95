#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

// Helpers for tests that run real binaries: temp folders, child processes killed by pid,
// commands with captured output.
namespace mkube::testing {

// A fresh folder under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A child process in its own process group, with stdout and stderr appended to log_path.
// Killed (SIGKILL, by pid) on destruction if still running.
class Subprocess {
 public:
  Subprocess(std::vector<std::string> argv, std::string log_path,
             std::map<std::string, std::string> env = {});
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  void Signal(int sig);
  // Waits for exit; returns the exit status as waitpid reports it, or nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // SIGKILL and reap.
  void Kill();

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

struct CommandResult {
  int exit_code = -1;  // -1: killed by timeout or signal
  std::string out;
  std::string err;
};

// Runs argv to completion (killed after timeout), with extra environment and stdin text.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env = {},
                         const std::string& stdin_text = "",
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));

// The file's first line, when it has a non-empty one.
std::optional<std::string> FirstLine(const std::string& path);
// Waits until the file exists and is non-empty; returns its first line.
std::optional<std::string> WaitForFileLine(const std::string& path,
                                           std::chrono::milliseconds timeout);

std::string ReadFile(const std::string& path);

// Where the project's binaries and the peer tools are.
std::string BinDir();
// The build's demo images (an OCI image layout tarball up.sh's agents hold from the start).
std::string DemoImages();
// The tests' own images (tests/images/test.json): tools:v1, appuser:v1 and web:v1.
std::string TestImages();

// GET http://ip:port/path (HTTP/1.0): the response's body, or empty when nothing answered.
std::string HttpGet(const std::string& ip, int port, const std::string& path);
// Sends `request` to 127.0.0.1:port, half-closes, and reads until the other side closes
// ("connect failed" when nothing listens).
std::string TcpExchange(int port, const std::string& request);
std::string EtcdctlPath();
std::string EtcdPath();

}  // namespace mkube::testing
