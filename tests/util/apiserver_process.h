#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tests/util/process.h"

namespace mkube::testing {

// Tokens every test apiserver accepts: an admin, the nodes node01 and node02, the scheduler.
inline constexpr char kTokens[] =
    "admin-token,admin,1,\"system:masters\"\n"
    "node01-token,system:node:node01,2,\"system:nodes\"\n"
    "sched-token,system:kube-scheduler,3,\n"
    "node02-token,system:node:node02,4,\"system:nodes\"\n"
    "master01-token,system:node:master01,5,\"system:nodes\"\n"
    "cm-token,system:kube-controller-manager,6,\n";
// What the test apiserver presents to node agents (in <dir>/agent.token).
inline constexpr char kAgentToken[] = "agent-token";

// The real mkube-apiserver on a free port, plaintext, with the tokens above; a watch may have
// 50 events waiting, the watch cache's window holds 16 MiB of objects.
// Its agent token file is <dir>/agent.token.
class ApiServerProcess {
 public:
  ApiServerProcess(std::string dir, std::string store) : dir_(std::move(dir)), store_(std::move(store)) {}
  absl::Status Start();
  // More flags for the next Start.
  std::vector<std::string> extra_args;
  // Where the next Start listens (port 0: a free one).
  std::string listen = "127.0.0.1:0";
  void Kill9() { proc_->Kill(); }
  pid_t pid() const { return proc_->pid(); }
  const std::string& address() const { return address_; }
  std::string agent_token_file() const { return dir_ + "/agent.token"; }

 private:
  std::string dir_, store_, address_;
  std::unique_ptr<Subprocess> proc_;
};


}  // namespace mkube::testing
