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

}  // namespace mkube::testing
