#include "tests/chaos/up_cluster.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace mkube::testing {
namespace fs = std::filesystem;

namespace {

// The fields of /proc/PID/stat after the command in parentheses: [0] is field 3, its state;
// [19] is field 22, its start time. Empty when there is no such process.
std::vector<std::string> StatOf(pid_t pid) {
  std::string stat = ReadFile(fmt::format("/proc/{}/stat", pid));
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return {};
  return absl::StrSplit(stat.substr(close + 2), ' ');
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

bool Alive(pid_t pid, const std::string& start) {
  if (pid <= 0) return false;
  const std::vector<std::string> stat = StatOf(pid);
  if (stat.size() < 20 || stat[0] == "Z" || stat[0] == "X") return false;
  return start.empty() || stat[19] == start;
}

UpCluster::~UpCluster() {
  if (up_) Down().IgnoreError();
}

CommandResult UpCluster::Script(const std::string& name, std::vector<std::string> args) const {
  std::vector<std::string> argv = {std::string(MKUBE_SOURCE_DIR) + "/deploy/" + name, "--state-dir",
                                   dir_.path()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> env;
  if (const char* build = getenv("MKUBE_BUILD_DIR")) env["MKUBE_BUILD_DIR"] = build;
  return RunCommand(argv, env, "", std::chrono::minutes(5));
}

absl::Status UpCluster::Up(const Options& o) {
  std::vector<std::string> args = {"--nodes",
                                   std::to_string(o.nodes),
                                   "--address-block",
                                   std::to_string(o.address_block),
                                   "--store-listen",
                                   "127.0.0.1:0",
                                   "--apiserver-listen",
                                   "127.0.0.1:0",
                                   "--apiserver-http-listen",
                                   "127.0.0.1:0",
                                   "--agent-port",
                                   "0"};
  args.insert(args.end(), o.extra_flags.begin(), o.extra_flags.end());
  up_ = true;
  auto r = Script("up.sh", args);
  if (r.exit_code != 0) {
    return absl::InternalError(fmt::format("up.sh failed ({}): {}\n{}", r.exit_code, r.out, r.err));
  }
  return absl::OkStatus();
}

absl::Status UpCluster::Down() {
  std::vector<pid_t> recorded;
  for (const char* sub : {"run", "run/supervisors"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_.Sub(sub), ec)) {
      if (e.path().extension() != ".pid") continue;
      int pid = 0;
      if (absl::SimpleAtoi(Trim(ReadFile(e.path())), &pid)) recorded.push_back(pid);
    }
  }
  const std::vector<Process> pods = PodProcesses();
  up_ = false;
  auto r = Script("down.sh", {});
  if (r.exit_code != 0) {
    return absl::InternalError(
        fmt::format("down.sh failed ({}): {}\n{}", r.exit_code, r.out, r.err));
  }
  std::vector<std::string> left;
  for (pid_t p : recorded) {
    if (Alive(p))
      left.push_back(fmt::format("{} ({})", p, Trim(ReadFile(fmt::format("/proc/{}/cmdline", p)))));
  }
  for (const Process& p : pods) {
    if (Alive(p.pid, p.start)) left.push_back(fmt::format("pod process {}", p.pid));
  }
  if (!left.empty()) {
    return absl::InternalError("still running after down.sh: " + absl::StrJoin(left, ", "));
  }
  return absl::OkStatus();
}

pid_t UpCluster::Pid(const std::string& daemon) const {
  int pid = -1;
  if (!absl::SimpleAtoi(Trim(ReadFile(dir_.Sub("run/" + daemon + ".pid"))), &pid)) return -1;
  return pid;
}

pid_t UpCluster::Kill9(const std::string& daemon) const {
  const pid_t pid = Pid(daemon);
  if (pid > 0) kill(pid, SIGKILL);
  return pid;
}

bool UpCluster::WaitRestarted(const std::string& daemon, pid_t old,
                              std::chrono::milliseconds limit) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t pid = Pid(daemon);
    if (pid > 0 && pid != old && Alive(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string UpCluster::Log(const std::string& daemon) const {
  return ReadFile(dir_.Sub("logs/" + daemon + ".log"));
}

std::string UpCluster::Logs() const {
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_.Sub("logs"), ec)) {
    std::string text = ReadFile(e.path());
    if (text.size() > 3000) text = "..." + text.substr(text.size() - 3000);
    out += "==== " + e.path().filename().string() + "\n" + text + "\n";
  }
  return out;
}

std::vector<UpCluster::Process> UpCluster::PodProcesses() const {
  std::vector<Process> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir_.Sub("nodes"), ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".pid") continue;
    auto j = nlohmann::json::parse(ReadFile(it->path()), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j["pid"].is_number_integer() ||
        !j["startTicks"].is_number_integer()) {
      continue;
    }
    Process p{j["pid"].get<pid_t>(), std::to_string(j["startTicks"].get<int64_t>())};
    if (Alive(p.pid, p.start)) out.push_back(p);
  }
  return out;
}

std::unique_ptr<client::GrpcClient> UpCluster::Client() const {
  client::ClientOptions o;
  o.address = Trim(ReadFile(dir_.Sub("run/apiserver.addr")));
  o.token = Trim(ReadFile(dir_.Sub("pki/admin.token")));
  o.ca_pem = ReadFile(dir_.Sub("pki/ca.crt"));
  o.own_connection = true;
  // A client whose calls fail at once while the apiserver is away never reconnects while
  // it is used only that way: gRPC reads a new connection's handshake only while a call waits.
  o.wait_for_ready = true;
  return std::make_unique<client::GrpcClient>(o);
}

}  // namespace mkube::testing
