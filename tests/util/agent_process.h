#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "tests/util/process.h"

namespace mkube::testing {

// The real mkube-agent for node `node` (its token is "<node>-token"), plaintext to the
// apiserver, serving on a free loopback port, with its node folder under dir.
class AgentProcess {
 public:
  struct Options {
    std::string dir;  // the agent's files: root/, logs, tokens
    std::string apiserver;
    std::string agent_token_file;  // plaintext; "": the TLS flags are in `extra`
    std::string node = "node01";
    std::string pod_cidr = "127.1.0.0/24";
    // Where it serves logs and exec; the apiserver reaches it at the node's address (the
    // --node-ip in `extra`, 127.0.0.1 without one) on this port.
    std::string listen = "127.0.0.1:0";
    std::vector<std::string> extra;
    std::vector<std::string> wrapper;  // runs the agent through this (e.g. setpriv as a user)
  };
  explicit AgentProcess(Options o) : o_(std::move(o)) {}
  ~AgentProcess() { Stop(); }

  absl::Status Start();
  // SIGTERM and wait: the agent stops its containers first.
  void Stop();
  void Kill9() {
    if (proc_) proc_->Kill();
  }
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }
  const std::string& address() const { return address_; }
  std::string root() const { return o_.dir + "/root"; }
  std::string log() const { return ReadFile(o_.dir + "/agent.log"); }

 private:
  Options o_;
  std::unique_ptr<Subprocess> proc_;
  std::string address_;
};

// `mkube-agent --simulated count` with the admin token (simulated nodes write every Node),
// its files under dir; Start waits until every node is registered.
class SimulatedAgentProcess {
 public:
  SimulatedAgentProcess(std::string dir, std::string apiserver, int count,
                        std::vector<std::string> extra = {})
      : dir_(std::move(dir)),
        apiserver_(std::move(apiserver)),
        count_(count),
        extra_(std::move(extra)) {}
  ~SimulatedAgentProcess() { Stop(); }
  absl::Status Start(std::chrono::seconds timeout = std::chrono::seconds(60));
  void Stop();
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }
  std::string log() const { return ReadFile(dir_ + "/agent.log"); }

 private:
  std::string dir_, apiserver_;
  int count_;
  std::vector<std::string> extra_;
  std::unique_ptr<Subprocess> proc_;
};

}  // namespace mkube::testing
