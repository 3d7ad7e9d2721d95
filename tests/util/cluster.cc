#include "tests/util/cluster.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <regex>

#include "fmt/format.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

// The nodes kTokens has tokens for; the place of each gives its addresses.
constexpr std::array<const char*, 3> kNodeNames = {"master01", "node01", "node02"};

// 1, 2, 3 for master01, node01, node02; 0 for any other.
int NodeNumber(const std::string& node) {
  const auto* it = std::find(kNodeNames.begin(), kNodeNames.end(), node);
  return it == kNodeNames.end() ? 0 : static_cast<int>(it - kNodeNames.begin()) + 1;
}

std::string DeployLib() { return std::string(MKUBE_SOURCE_DIR) + "/deploy/lib/"; }

}  // namespace

Cluster::~Cluster() { Stop(); }

absl::Status Cluster::Start(Options options) {
  options_ = std::move(options);
  // Addresses of its own, so that clusters of tests running side by side never share a pod
  // address (the demo images all listen on port 80).
  base_ = 20 + static_cast<int>(getpid() % 100) * 2;
  for (const auto& node : options_.nodes) {
    if (NodeNumber(node) == 0) return absl::InvalidArgumentError("no token for node " + node);
  }
  if (!options_.apiserver && (!options_.nodes.empty() || options_.simulated_nodes > 0 ||
                              options_.scheduler || options_.controller_manager)) {
    return absl::InvalidArgumentError("nodes and controllers need the apiserver");
  }
  if (auto st = StartStore(); !st.ok()) return st;
  if (!options_.apiserver) return absl::OkStatus();
  if (auto st = StartApiserver(); !st.ok()) return st;
  if (auto st = StartNodes(); !st.ok()) return st;
  if (options_.scheduler) {
    if (auto st = StartScheduler("sched-a", &scheduler_); !st.ok()) return st;
  }
  if (options_.controller_manager) {
    if (auto st = StartControllerManager("cm-a", &controller_manager_); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status Cluster::StartStore() {
  if (options_.store == Store::kEtcd) {
    etcd_ = std::make_unique<EtcdProcess>(dir_.Sub("etcd"), dir_.Sub("etcd.log"));
    if (auto st = etcd_->Start(); !st.ok()) return st;
    store_address_ = etcd_->address();
  } else {
    store_ = std::make_unique<StoreProcess>(dir_.Sub("store"), dir_.Sub("store.log"));
    if (auto st = store_->Start(); !st.ok()) return st;
    store_address_ = store_->address();
  }
  return absl::OkStatus();
}

absl::Status Cluster::StartApiserver() {
  if (options_.agent_tls) {
    auto made = RunCommand({DeployLib() + "certs.sh", pki()});
    if (made.exit_code != 0) return absl::InternalError("certs.sh failed: " + made.err);
    options_.apiserver_flags.insert(
        options_.apiserver_flags.end(),
        {"--agent-client-certificate", pki() + "/apiserver-agent-client.crt", "--agent-client-key",
         pki() + "/apiserver-agent-client.key", "--agent-certificate-authority",
         pki() + "/ca.crt"});
  }
  return RestartApiserver();
}

absl::Status Cluster::RestartApiserver(const std::string& listen) {
  client_.reset();
  if (api_) api_->Kill9();
  api_ = std::make_unique<ApiServerProcess>(dir_.path(), store_address_);
  api_->extra_args = options_.apiserver_flags;
  api_->listen = listen;
  if (auto st = api_->Start(); !st.ok()) return st;
  client_ = std::make_unique<client::GrpcClient>(ClientOptionsFor("admin-token"));
  WriteKubeconfig(kubeconfig(), "admin-token");
  return absl::OkStatus();
}

absl::Status Cluster::StartNodes() {
  // (Simulated nodes pull nothing.)
  if (!options_.nodes.empty()) {
    if (auto st = CheckImages(); !st.ok()) return st;
  }
  for (const std::string& node : options_.nodes) {
    if (options_.agent_tls) {
      if (auto st = MakeAgentCertificate(node); !st.ok()) return st;
    }
    AgentProcess::Options o = AgentOptions(node);
    if (node == "master01") {
      o.extra.insert(o.extra.end(),
                     {"--node-labels", "node-role.kubernetes.io/master=", "--register-with-taints",
                      "node-role.kubernetes.io/master:NoSchedule"});
    }
    auto agent = std::make_unique<AgentProcess>(o);
    if (auto st = agent->Start(); !st.ok()) return st;
    agents_.emplace_back(node, std::move(agent));
  }
  if (options_.simulated_nodes > 0) {
    simulated_ = std::make_unique<SimulatedAgentProcess>(
        dir_.Sub("sim"), api_->address(), options_.simulated_nodes, options_.simulated_flags);
    if (auto st = simulated_->Start(); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status Cluster::CheckImages() const {
  for (const std::string& archive : {DemoImages(), TestImages()}) {
    if (!std::filesystem::exists(archive)) {
      return absl::FailedPreconditionError("the build made no images at " + archive +
                                           " (is busybox installed?)");
    }
  }
  return absl::OkStatus();
}

absl::Status Cluster::MakeAgentCertificate(const std::string& node) const {
  const std::string node_pki = pki() + "/nodes/" + node;
  auto made = RunCommand({DeployLib() + "agent-cert.sh", "request", node_pki});
  if (made.exit_code == 0) {
    made = RunCommand({DeployLib() + "agent-cert.sh", "sign", pki(), node_pki + "/agent.csr", node,
                       NodeIp(node), node_pki + "/agent.crt"});
  }
  if (made.exit_code != 0) return absl::InternalError("agent-cert.sh failed: " + made.err);
  return absl::OkStatus();
}

std::string Cluster::NodeIp(const std::string& node) const {
  return options_.node_ips ? fmt::format("127.{}.1.{}", base_, NodeNumber(node)) : "127.0.0.1";
}

std::string Cluster::PodPrefix(const std::string& node) const {
  return fmt::format("127.{}.{}.", base_ + 1, NodeNumber(node));
}

AgentProcess::Options Cluster::AgentOptions(const std::string& node) const {
  if (NodeNumber(node) == 0) std::abort();
  AgentProcess::Options o;
  o.dir = dir_.Sub(node);
  o.apiserver = api_->address();
  o.agent_token_file = api_->agent_token_file();
  o.node = node;
  o.extra = {"--image-archive", DemoImages()};
  if (options_.images == Images::kTest) o.extra.insert(o.extra.end(), {"--image-archive", TestImages()});
  o.pod_cidr = PodPrefix(node) + "0/24";
  if (options_.node_ips) {
    o.extra.insert(o.extra.end(), {"--node-ip", NodeIp(node)});
    o.listen = NodeIp(node) + ":0";
  }
  if (options_.agent_tls) {
    const std::string node_pki = pki() + "/nodes/" + node;
    o.agent_token_file.clear();
    o.extra.insert(o.extra.end(),
                   {"--tls-cert-file", node_pki + "/agent.crt", "--tls-private-key-file",
                    node_pki + "/agent.key", "--client-ca-file", pki() + "/ca.crt"});
  }
  o.extra.insert(o.extra.end(), options_.agent_flags.begin(), options_.agent_flags.end());
  return o;
}

int Cluster::StartPortForward(std::vector<std::string> args, std::unique_ptr<Subprocess>* proc,
                              std::string* log) {
  *log = dir_.Sub("forward-" + std::to_string(forwards_++) + ".log");
  args.insert(args.begin(), {BinDir() + "/mkubectl", "port-forward"});
  *proc = std::make_unique<Subprocess>(
      args, *log, std::map<std::string, std::string>{{"MKUBECONFIG", kubeconfig()}});
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

absl::Status Cluster::StartApiserver(const std::string& name, std::vector<std::string> flags,
                                     std::unique_ptr<ApiServerProcess>* out) const {
  std::filesystem::create_directories(dir_.Sub(name));
  *out = std::make_unique<ApiServerProcess>(dir_.Sub(name), store_address_);
  (*out)->extra_args = std::move(flags);
  return (*out)->Start();
}

absl::Status Cluster::StartScheduler(const std::string& identity,
                                     std::unique_ptr<SchedulerProcess>* out) const {
  *out = std::make_unique<SchedulerProcess>(dir_.Sub(identity), api_->address(), identity);
  return (*out)->Start();
}

absl::Status Cluster::StartControllerManager(const std::string& identity,
                                             std::unique_ptr<ControllerManagerProcess>* out) const {
  *out = std::make_unique<ControllerManagerProcess>(dir_.Sub(identity), api_->address(), identity);
  (*out)->extra = options_.controller_manager_flags;
  return (*out)->Start();
}

void Cluster::Stop() {
  client_.reset();
  controller_manager_.reset();
  scheduler_.reset();
  simulated_.reset();
  for (auto it = agents_.rbegin(); it != agents_.rend(); ++it) it->second.reset();
  agents_.clear();
  api_.reset();
  store_.reset();
  etcd_.reset();
}

CommandResult Cluster::Ctl(std::vector<std::string> args, const std::string& stdin_text,
                           std::chrono::milliseconds timeout,
                           std::map<std::string, std::string> env) const {
  args.insert(args.begin(), BinDir() + "/mkubectl");
  env.emplace("MKUBECONFIG", kubeconfig());
  return RunCommand(args, env, stdin_text, timeout);
}

void Cluster::WriteKubeconfig(const std::string& path, const std::string& token) const {
  std::ofstream(path) << "apiVersion: v1\nkind: Config\n"
                      << "clusters:\n- name: test\n  cluster:\n    server: http://"
                      << api_->address() << "\n"
                      << "users:\n- name: admin\n  user:\n    token: " << token << "\n"
                      << "contexts:\n- name: test\n  context: {cluster: test, user: admin}\n"
                      << "current-context: test\n";
}

client::ClientOptions Cluster::ClientOptionsFor(const std::string& token) const {
  client::ClientOptions o;
  o.address = api_->address();
  o.token = token;
  return o;
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
