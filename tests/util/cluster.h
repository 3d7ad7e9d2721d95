#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "tests/util/agent_process.h"
#include "tests/util/apiserver_process.h"
#include "tests/util/control_plane_process.h"
#include "tests/util/process.h"
#include "tests/util/store_process.h"

namespace mkube::testing {

// The seeds' cluster from real binaries, in a temp folder: mkube-store, mkube-apiserver,
// agents master01 (tainted node-role.kubernetes.io/master:NoSchedule), node01 and node02 on
// loopback addresses of their own (127.B.1.1-3, pods in 127.B+1.1-3.0/24, B from the pid)
// with the demo images (soscscs/myapp:v1 and v2 among them), the scheduler and
// the controller-manager; an admin client and a kubeconfig for mkubectl.
class Cluster {
 public:
  struct Options {
    bool scheduler = true;
    bool controller_manager = true;
    std::vector<std::string> controller_manager_flags;
    std::vector<std::string> apiserver_flags;
    std::vector<std::string> agent_flags;
    // The agents serve TLS with certificates for their nodes, and the apiserver reaches them
    // with its client certificate, as up.sh sets them up (pki() holds them all).
    bool agent_tls = false;
  };
  Cluster() = default;
  ~Cluster();

  absl::Status Start(Options options);
  // Stops every process it started (in the reverse order).
  void Stop();

  // mkubectl with the cluster's kubeconfig.
  CommandResult Ctl(std::vector<std::string> args, const std::string& stdin_text = "",
                    std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // Starts `mkubectl port-forward args...` (its output in *log) and returns the local port of
  // its first forward, 0 when none is reported within the deadline.
  int StartPortForward(std::vector<std::string> args, std::unique_ptr<Subprocess>* proc,
                       std::string* log);
  client::ApiClient* client() const { return client_.get(); }
  const TempDir& dir() const { return dir_; }
  // The CA and certificates of agent_tls: ca.crt, apiserver-agent-client.{crt,key}, and
  // nodes/<node>/agent.{crt,key}.
  std::string pki() const { return dir_.Sub("pki"); }
  const ApiServerProcess& apiserver() const { return *api_; }
  AgentProcess& agent(const std::string& node);
  ControllerManagerProcess& controller_manager() { return *controller_manager_; }
  // Starts another controller-manager (leader election), named `identity`.
  absl::Status StartControllerManager(const std::string& identity,
                                      std::unique_ptr<ControllerManagerProcess>* out) const;
  // Logs of every daemon, for a failing assertion.
  std::string Logs() const;

 private:
  TempDir dir_;
  std::unique_ptr<StoreProcess> store_;
  std::unique_ptr<ApiServerProcess> api_;
  std::vector<std::pair<std::string, std::unique_ptr<AgentProcess>>> agents_;
  std::unique_ptr<SchedulerProcess> scheduler_;
  std::unique_ptr<ControllerManagerProcess> controller_manager_;
  std::unique_ptr<client::ApiClient> client_;
  std::vector<std::string> cm_flags_;
  int forwards_ = 0;
};

}  // namespace mkube::testing
