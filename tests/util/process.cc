#include "tests/util/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void ApplyEnv(const std::map<std::string, std::string>& env) {
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
}

}  // namespace

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/mkube-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Subprocess::Subprocess(std::vector<std::string> argv, std::string log_path,
                       std::map<std::string, std::string> env) {
  auto args = CStrings(argv);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    setpgid(0, 0);
    // If the test dies without cleaning up (an abort), its children die with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    ApplyEnv(env);
    execv(args[0], args.data());
    std::fprintf(stderr, "exec %s failed: %s\n", args[0], strerror(errno));
    _exit(127);
  }
}

Subprocess::~Subprocess() {
  if (!reaped_) Kill();
}

bool Subprocess::Running() {
  if (reaped_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

void Subprocess::Signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

std::optional<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  if (reaped_) return 0;
  int status = 0;
  if (!Eventually([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout)) {
    return std::nullopt;
  }
  reaped_ = true;
  return status;
}

void Subprocess::Kill() {
  if (reaped_) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  reaped_ = true;
}

CommandResult RunCommand(const std::vector<std::string>& argv_in,
                         const std::map<std::string, std::string>& env,
                         const std::string& stdin_text, std::chrono::milliseconds timeout) {
  TempDir dir;
  const std::string out_path = dir.Sub("out"), err_path = dir.Sub("err"), in_path = dir.Sub("in");
  {
    std::ofstream in(in_path);
    in << stdin_text;
  }
  std::vector<std::string> argv = argv_in;
  auto args = CStrings(argv);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int in = open(in_path.c_str(), O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    ApplyEnv(env);
    execvp(args[0], args.data());
    std::fprintf(stderr, "exec %s failed: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  CommandResult result;
  int status = 0;
  if (!Eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, timeout)) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  return result;
}

std::optional<std::string> FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in && std::getline(in, line) && !line.empty()) return line;
  return std::nullopt;
}

std::optional<std::string> WaitForFileLine(const std::string& path,
                                           std::chrono::milliseconds timeout) {
  std::optional<std::string> line;
  Eventually([&] { return (line = FirstLine(path)).has_value(); }, timeout);
  return line;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string BinDir() { return MKUBE_BIN_DIR; }
std::string DemoImages() { return std::string(MKUBE_BIN_DIR) + "/../images/demo.tar"; }
std::string TestImages() { return std::string(MKUBE_BIN_DIR) + "/../images/test.tar"; }
std::string EtcdctlPath() { return MKUBE_ETCDCTL; }
std::string EtcdPath() { return MKUBE_ETCD; }

std::string HttpGet(const std::string& ip, int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + ip + "\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) response.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

std::string TcpExchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "connect failed";
  }
  timeval tv{.tv_sec = 10, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)!write(fd, request.data(), request.size());
  shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

}  // namespace mkube::testing
