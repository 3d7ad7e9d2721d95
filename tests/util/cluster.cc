#include "tests/util/cluster.h"

#include <unistd.h>

#include <fstream>
#include <regex>

#include "fmt/format.h"
#include "tests/util/eventually.h"

namespace mkube::testing {

Cluster::~Cluster() { Stop(); }

absl::Status Cluster::Start(Options options) {
  store_ = std::make_unique<StoreProcess>(dir_.Sub("store"), dir_.Sub("store.log"));
  if (auto st = store_->Start(); !st.ok()) return st;
  const std::string deploy = std::string(MKUBE_SOURCE_DIR) + "/deploy/lib/";
  if (options.agent_tls) {
    auto made = RunCommand({deploy + "certs.sh", pki()});
    if (made.exit_code != 0) return absl::InternalError("certs.sh failed: " + made.err);
    options.apiserver_flags.insert(
        options.apiserver_flags.end(),
        {"--agent-client-certificate", pki() + "/apiserver-agent-client.crt", "--agent-client-key",
         pki() + "/apiserver-agent-client.key", "--agent-certificate-authority",
         pki() + "/ca.crt"});
  }
  api_ = std::make_unique<ApiServerProcess>(dir_.path(), store_->address());
  api_->extra_args = options.apiserver_flags;
  if (auto st = api_->Start(); !st.ok()) return st;
  // The registry up.sh writes: busybox, nginx, soscscs/myapp:v1 and :v2.
  auto images = RunCommand({deploy + "images.sh", dir_.Sub("registry"), BinDir()});
  if (images.exit_code != 0) {
    return absl::InternalError("images.sh failed: " + images.err);
  }
  // Addresses of its own (nodes 127.B.1.i, pods 127.B+1.i.0/24), so that clusters of tests
  // running side by side never share a pod address (the demo images all listen on port 80).
  const int base = 20 + static_cast<int>(getpid() % 100) * 2;
  int i = 0;
  for (const std::string node : {"master01", "node01", "node02"}) {
    ++i;
    AgentProcess::Options o;
    o.dir = dir_.Sub(node);
    o.apiserver = api_->address();
    o.agent_token_file = api_->agent_token_file();
    o.node = node;
    o.registry = dir_.Sub("registry");
    o.pod_cidr = fmt::format("127.{}.{}.0/24", base + 1, i);
    const std::string ip = fmt::format("127.{}.1.{}", base, i);
    o.extra = {"--node-ip", ip};
    o.listen = ip + ":0";
    if (options.agent_tls) {
      const std::string node_pki = pki() + "/nodes/" + node;
      auto made = RunCommand({deploy + "agent-cert.sh", "request", node_pki});
      if (made.exit_code == 0) {
        made = RunCommand({deploy + "agent-cert.sh", "sign", pki(), node_pki + "/agent.csr", node,
                           ip, node_pki + "/agent.crt"});
      }
      if (made.exit_code != 0) return absl::InternalError("agent-cert.sh failed: " + made.err);
      o.agent_token_file.clear();
      o.extra.insert(o.extra.end(),
                     {"--tls-cert-file", node_pki + "/agent.crt", "--tls-private-key-file",
                      node_pki + "/agent.key", "--client-ca-file", pki() + "/ca.crt"});
    }
    o.extra.insert(o.extra.end(), options.agent_flags.begin(), options.agent_flags.end());
    if (node == "master01") {
      o.extra.insert(o.extra.end(),
                     {"--node-labels", "node-role.kubernetes.io/master=", "--register-with-taints",
                      "node-role.kubernetes.io/master:NoSchedule"});
    }
    auto agent = std::make_unique<AgentProcess>(o);
    if (auto st = agent->Start(); !st.ok()) return st;
    agents_.emplace_back(node, std::move(agent));
  }
  if (options.scheduler) {
    scheduler_ = std::make_unique<SchedulerProcess>(dir_.Sub("sched-a"), api_->address());
    if (auto st = scheduler_->Start(); !st.ok()) return st;
  }
  cm_flags_ = options.controller_manager_flags;
  if (options.controller_manager) {
    if (auto st = StartControllerManager("cm-a", &controller_manager_); !st.ok()) return st;
  }
  client::ClientOptions co;
  co.address = api_->address();
  co.token = "admin-token";
  client_ = std::make_unique<client::GrpcClient>(co);
  std::ofstream(dir_.Sub("config"))
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: http://"
      << api_->address() << "\nusers:\n- name: a\n  user:\n    token: admin-token\n"
      << "contexts:\n- name: t\n  context: {cluster: t, user: a}\ncurrent-context: t\n";
  return absl::OkStatus();
}

int Cluster::StartPortForward(std::vector<std::string> args, std::unique_ptr<Subprocess>* proc,
                              std::string* log) {
  *log = dir_.Sub("forward-" + std::to_string(forwards_++) + ".log");
  args.insert(args.begin(), {BinDir() + "/mkubectl", "port-forward"});
  *proc = std::make_unique<Subprocess>(
      args, *log, std::map<std::string, std::string>{{"MKUBECONFIG", dir_.Sub("config")}});
  int port = 0;
  Eventually([&] {
    std::smatch m;
    const std::string text = ReadFile(*log);
    if (!std::regex_search(text, m, std::regex("Forwarding from 127.0.0.1:(\\d+) -> \\d+"))) {
      return false;
    }
    port = std::stoi(m[1]);
    return true;
  });
  return port;
}

absl::Status Cluster::StartControllerManager(
    const std::string& identity, std::unique_ptr<ControllerManagerProcess>* out) const {
  *out = std::make_unique<ControllerManagerProcess>(dir_.Sub(identity), api_->address(), identity);
  (*out)->extra = cm_flags_;
  return (*out)->Start();
}

void Cluster::Stop() {
  client_.reset();
  controller_manager_.reset();
  scheduler_.reset();
  for (auto it = agents_.rbegin(); it != agents_.rend(); ++it) it->second.reset();
  agents_.clear();
  api_.reset();
  store_.reset();
}

CommandResult Cluster::Ctl(std::vector<std::string> args, const std::string& stdin_text,
                           std::chrono::milliseconds timeout) const {
  args.insert(args.begin(), BinDir() + "/mkubectl");
  return RunCommand(args, {{"MKUBECONFIG", dir_.Sub("config")}}, stdin_text, timeout);
}

AgentProcess& Cluster::agent(const std::string& node) {
  for (auto& [name, agent] : agents_) {
    if (name == node) return *agent;
  }
  std::abort();
}

std::string Cluster::Logs() const {
  std::string out;
  if (controller_manager_) out += "--- controller-manager\n" + controller_manager_->log();
  if (scheduler_) out += "--- scheduler\n" + scheduler_->log();
  return out;
}

}  // namespace mkube::testing
