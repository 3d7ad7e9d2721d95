#pragma once

#include <chrono>
#include <map>
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

// Real binaries in a temp folder, each on a port of its own choosing and killed by pid when
// the cluster stops: a store and mkube-apiserver, then what Options ask for of agents, simulated
// nodes, the scheduler and the controller-manager; an admin client and a kubeconfig for mkubectl.
//
// By default the seeds' cluster: agents master01 (tainted
// node-role.kubernetes.io/master:NoSchedule), node01 and node02 on loopback addresses of their
// own (127.B.1.1-3, pods in 127.B+1.1-3.0/24, B from the pid) with the demo images
// (soscscs/myapp:v1 and v2 among them), the scheduler and the controller-manager.
class Cluster {
 public:
  enum class Store {
    kMkube,  // mkube-store
    kEtcd,   // a real etcd, the peer
  };
  // The images the agents hold from the start (--image-archive).
  enum class Images {
    kSeeds,  // up.sh's (the build's demo images): busybox, nginx, soscscs/myapp:v1 and :v2
    kTest,   // those and the tests' own (TestImages): tools:v1, appuser:v1, web:v1
  };
  struct Options {
    Store store = Store::kMkube;
    // Without it only the store runs, and nothing else may be asked for.
    bool apiserver = true;
    // Real agents, of the nodes the apiserver has tokens for: master01, node01, node02.
    std::vector<std::string> nodes = {"master01", "node01", "node02"};
    // Each agent on an address of its own (NodeIp), so that clusters of tests running side by
    // side never share one (the demo images all listen on port 80); else on 127.0.0.1, an
    // agent's default. Pods always have addresses of their own (PodPrefix).
    bool node_ips = true;
    Images images = Images::kSeeds;
    // `mkube-agent --simulated`: that many nodes more (sim-0000...), from one process.
    int simulated_nodes = 0;
    std::vector<std::string> simulated_flags;
    bool scheduler = true;
    bool controller_manager = true;
    std::vector<std::string> controller_manager_flags;
    std::vector<std::string> apiserver_flags;
    // For every agent, those Start starts and those started from AgentOptions.
    std::vector<std::string> agent_flags;
    // The agents serve TLS with certificates for their nodes, and the apiserver reaches them
    // with its client certificate, as up.sh sets them up (pki() holds them all).
    bool agent_tls = false;
  };
  // The store and the apiserver alone.
  static Options ApiserverOnly() {
    return {.nodes = {}, .scheduler = false, .controller_manager = false};
  }

  Cluster() = default;
  ~Cluster();

  absl::Status Start(Options options);
  // Stops every process it started (in the reverse order).
  void Stop();

  // mkubectl with the cluster's kubeconfig (MKUBECONFIG, as a user sets it) unless `env` names
  // another, and `env` besides.
  CommandResult Ctl(std::vector<std::string> args, const std::string& stdin_text = "",
                    std::chrono::milliseconds timeout = std::chrono::seconds(30),
                    std::map<std::string, std::string> env = {}) const;
  // Starts `mkubectl port-forward args...` (its output in *log) and returns the local port of
  // its first forward, 0 when none is reported within the deadline.
  int StartPortForward(std::vector<std::string> args, std::unique_ptr<Subprocess>* proc,
                       std::string* log);
  // A kubeconfig at `path` for the apiserver with `token` (cluster test, user admin, context
  // test).
  void WriteKubeconfig(const std::string& path, const std::string& token) const;
  std::string kubeconfig() const { return dir_.Sub("config"); }

  // The admin client; made anew when the apiserver is.
  client::ApiClient* client() const { return client_.get(); }
  // What a client of the apiserver with `token` (of kTokens) is made with.
  client::ClientOptions ClientOptionsFor(const std::string& token) const;
  const TempDir& dir() const { return dir_; }
  // The CA and certificates of agent_tls: ca.crt, apiserver-agent-client.{crt,key}, and
  // nodes/<node>/agent.{crt,key}.
  std::string pki() const { return dir_.Sub("pki"); }
  const std::string& store_address() const { return store_address_; }
  ApiServerProcess& apiserver() { return *api_; }
  AgentProcess& agent(const std::string& node);
  SchedulerProcess& scheduler() { return *scheduler_; }
  ControllerManagerProcess& controller_manager() { return *controller_manager_; }

  // Where node's agent is reached (--node-ip): its own address, or 127.0.0.1 without node_ips.
  std::string NodeIp(const std::string& node) const;
  // The first three parts of the addresses of node's pods ("127.x.y.").
  std::string PodPrefix(const std::string& node) const;
  // What node's agent is started with (but master01's label and taint): for another agent in
  // a test, as the test may change it. With agent_tls, for the nodes of Options only (those
  // that have certificates).
  AgentProcess::Options AgentOptions(const std::string& node) const;

  // Starts a new apiserver in place of the one there (killed first, if it still runs), on the
  // same store, files and flags, at `listen`; the admin client and the kubeconfig follow it.
  absl::Status RestartApiserver(const std::string& listen = "127.0.0.1:0");
  // Another apiserver on the store, its files in <dir>/<name>, with more flags.
  absl::Status StartApiserver(const std::string& name, std::vector<std::string> flags,
                              std::unique_ptr<ApiServerProcess>* out) const;
  // Another scheduler or controller-manager (leader election), named `identity`.
  absl::Status StartScheduler(const std::string& identity,
                              std::unique_ptr<SchedulerProcess>* out) const;
  absl::Status StartControllerManager(const std::string& identity,
                                      std::unique_ptr<ControllerManagerProcess>* out) const;
  // Logs of the scheduler and the controller-manager, for a failing assertion.
  std::string Logs() const;

 private:
  absl::Status StartStore();
  absl::Status StartApiserver();
  // The agents and the simulated nodes.
  absl::Status StartNodes();
  absl::Status CheckImages() const;
  absl::Status MakeAgentCertificate(const std::string& node) const;

  TempDir dir_;
  Options options_;
  // Addresses of the cluster's own: nodes 127.B.1.i, pods 127.B+1.i.0/24.
  int base_ = 0;
  std::unique_ptr<StoreProcess> store_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::string store_address_;
  std::unique_ptr<ApiServerProcess> api_;
  std::vector<std::pair<std::string, std::unique_ptr<AgentProcess>>> agents_;
  std::unique_ptr<SimulatedAgentProcess> simulated_;
  std::unique_ptr<SchedulerProcess> scheduler_;
  std::unique_ptr<ControllerManagerProcess> controller_manager_;
  std::unique_ptr<client::ApiClient> client_;
  int forwards_ = 0;
};

}  // namespace mkube::testing
