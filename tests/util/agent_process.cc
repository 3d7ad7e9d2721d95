#include "tests/util/agent_process.h"

#include <signal.h>

#include <filesystem>
#include <fstream>

namespace mkube::testing {

absl::Status AgentProcess::Start() {
  std::filesystem::create_directories(o_.dir);
  const std::string addr_file = o_.dir + "/agent.addr";
  std::filesystem::remove(addr_file);
  std::ofstream(o_.dir + "/node.token") << o_.node << "-token\n";
  std::vector<std::string> argv = {BinDir() + "/mkube-agent",
                                   "--apiserver",
                                   o_.apiserver,
                                   "--insecure-plaintext",
                                   "--token-file",
                                   o_.dir + "/node.token",
                                   "--node-name",
                                   o_.node,
                                   "--listen",
                                   o_.listen,
                                   "--root-dir",
                                   root(),
                                   "--image-registry",
                                   o_.registry,
                                   "--pod-cidr",
                                   o_.pod_cidr,
                                   "--address-file",
                                   addr_file};
  if (!o_.agent_token_file.empty()) {
    argv.insert(argv.end(), {"--agent-token-file", o_.agent_token_file});
  }
  argv.insert(argv.end(), o_.extra.begin(), o_.extra.end());
  argv.insert(argv.begin(), o_.wrapper.begin(), o_.wrapper.end());
  proc_ = std::make_unique<Subprocess>(argv, o_.dir + "/agent.log");
  auto line = WaitForFileLine(addr_file, std::chrono::seconds(30));
  if (!line) return absl::UnavailableError("agent did not start:\n" + log());
  address_ = *line;
  return absl::OkStatus();
}

void AgentProcess::Stop() {
  if (!proc_ || !proc_->Running()) return;
  proc_->Signal(SIGTERM);
  if (!proc_->Wait(std::chrono::seconds(20))) proc_->Kill();
}

absl::Status SimulatedAgentProcess::Start(std::chrono::seconds timeout) {
  std::filesystem::create_directories(dir_);
  const std::string ready = dir_ + "/agent.ready";
  std::filesystem::remove(ready);
  std::ofstream(dir_ + "/admin.token") << "admin-token\n";
  std::ofstream(dir_ + "/agent.token") << "unused\n";
  std::vector<std::string> argv = {BinDir() + "/mkube-agent",
                                   "--apiserver",
                                   apiserver_,
                                   "--insecure-plaintext",
                                   "--token-file",
                                   dir_ + "/admin.token",
                                   "--agent-token-file",
                                   dir_ + "/agent.token",
                                   "--root-dir",
                                   dir_ + "/root",
                                   "--simulated",
                                   std::to_string(count_),
                                   "--ready-file",
                                   ready};
  argv.insert(argv.end(), extra_.begin(), extra_.end());
  proc_ = std::make_unique<Subprocess>(argv, dir_ + "/agent.log");
  if (!WaitForFileLine(ready, timeout)) {
    return absl::UnavailableError("simulated agent did not start:\n" + log());
  }
  return absl::OkStatus();
}

void SimulatedAgentProcess::Stop() {
  if (!proc_ || !proc_->Running()) return;
  proc_->Signal(SIGTERM);
  if (!proc_->Wait(std::chrono::seconds(20))) proc_->Kill();
}

void WriteTestRegistry(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir + "/busybox/latest");
  std::ofstream(dir + "/busybox/latest/image.json") << R"({"cmd": ["sh"]})";
  fs::create_directories(dir + "/tools/v1/bin");
  std::ofstream(dir + "/tools/v1/image.json")
      << R"({"entrypoint": ["greet"], "cmd": ["world"], "env": ["GREETING=hello"]})";
  const std::string greet = dir + "/tools/v1/bin/greet";
  std::ofstream(greet) << "#!/bin/sh\necho \"$GREETING $1 from $IMAGE_ROOT\"\n";
  // Runnable by any user: containers do not run as root.
  fs::permissions(greet, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
  // An image with users of its own, run as one of them by name.
  fs::create_directories(dir + "/appuser/v1/etc");
  std::ofstream(dir + "/appuser/v1/image.json") << R"({"cmd": ["sleep", "3600"], "user": "app"})";
  std::ofstream(dir + "/appuser/v1/etc/passwd")
      << "root:x:0:0:root:/root:/bin/sh\napp:x:1500:1600:app:/home/app:/bin/sh\n";
  std::ofstream(dir + "/appuser/v1/etc/group") << "root:x:0:\napp:x:1600:\nstaff:x:50:app\n";
  fs::create_directories(dir + "/web/v1/bin");
  std::ofstream(dir + "/web/v1/image.json") << R"({"entrypoint": ["web"], "env": ["PORT=8080"]})";
  fs::copy_file(BinDir() + "/mkube-demo-server", dir + "/web/v1/bin/web",
                fs::copy_options::overwrite_existing);
}

}  // namespace mkube::testing
