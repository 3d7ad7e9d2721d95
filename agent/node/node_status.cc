#include "agent/node/node_status.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "api/object.h"
#include "base/log.h"
#include "base/platform.h"
#include "base/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace mkube::agent::node {
namespace {

// The kubelet's nodeStatusMaxImages.
constexpr size_t kMaxStatusImages = 50;

spdlog::logger& Log() {
  static spdlog::logger& log = log::Logger("node");
  return log;
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string OsImage() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "Linux";
}

// The status without its heartbeat times: what changing it means.
api::NodeStatus Unstamped(api::NodeStatus status) {
  for (auto& c : *status.mutable_conditions()) c.clear_last_heartbeat_time();
  return status;
}

// Kubernetes' MicroTime, as leases carry it.
std::string MicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

}  // namespace

std::map<std::string, std::string> MachineCapacity() {
  std::map<std::string, std::string> cap;
  cap["cpu"] = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  long long kib = 0;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") cap["memory"] = fmt::format("{}Ki", kib);
  }
  cap["pods"] = "110";
  cap["ephemeral-storage"] = "10Gi";
  return cap;
}

// What does not change while the agent runs: capacity, addresses, endpoints, node info.
static api::NodeStatus MachineStatus(const NodeOptions& o) {
  api::NodeStatus st;
  auto capacity = o.capacity.empty() ? MachineCapacity() : o.capacity;
  for (const auto& [k, v] : capacity) {
    (*st.mutable_capacity())[k] = v;
    (*st.mutable_allocatable())[k] = v;
  }
  auto* ip = st.add_addresses();
  ip->set_type("InternalIP");
  ip->set_address(o.ip);
  auto* host = st.add_addresses();
  host->set_type("Hostname");
  host->set_address(o.name);
  st.mutable_daemon_endpoints()->mutable_kubelet_endpoint()->set_port(o.agent_port);
  auto* info = st.mutable_node_info();
  utsname u{};
  uname(&u);
  info->set_machine_id(FirstLine("/etc/machine-id"));
  info->set_boot_id(FirstLine("/proc/sys/kernel/random/boot_id"));
  info->set_kernel_version(u.release);
  info->set_os_image(OsImage());
  info->set_container_runtime_version("mkube://" + o.version);
  info->set_kubelet_version(o.version);
  info->set_kube_proxy_version(o.version);
  info->set_operating_system("linux");
  info->set_architecture(HostArchitecture());
  return st;
}

api::NodeStatus NodeStatusManager::BuildStatus(absl::Time now) const {
  api::NodeStatus st = machine_;
  const std::string stamp = api::Rfc3339(now);
  auto condition = [&](const char* type, const char* status, const char* reason,
                       const char* message) {
    auto* c = st.add_conditions();
    c->set_type(type);
    c->set_status(status);
    c->set_reason(reason);
    c->set_message(message);
    c->set_last_heartbeat_time(stamp);
    c->set_last_transition_time(ready_since_.empty() ? stamp : ready_since_);
  };
  condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available");
  condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure");
  condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available");
  condition("Ready", "True", "KubeletReady", "kubelet is posting ready status");
  // The largest images first, at most as many as the kubelet reports (nodeStatusMaxImages).
  std::vector<runtime::Image> images = images_->List();
  std::stable_sort(images.begin(), images.end(),
                   [](const auto& a, const auto& b) { return a.size_bytes > b.size_bytes; });
  if (images.size() > kMaxStatusImages) images.resize(kMaxStatusImages);
  for (const auto& img : images) {
    auto* ci = st.add_images();
    ci->add_names(img.ref.String());
    for (const auto& alias : img.aliases) ci->add_names(alias);
    ci->set_size_bytes(img.size_bytes);
  }
  return st;
}

NodeStatusManager::NodeStatusManager(client::ApiClient* client, runtime::ImageStore* images,
                                     client::EventRecorder* events, NodeOptions options,
                                     client::Clock* clock)
    : client_(client),
      images_(images),
      events_(events),
      options_(std::move(options)),
      clock_(clock),
      machine_(MachineStatus(options_)) {}

absl::Status NodeStatusManager::Register() {
  const absl::Time now = clock_->Now();
  ready_since_ = api::Rfc3339(now);
  api::Node node;
  node.set_api_version("v1");
  node.set_kind("Node");
  node.mutable_metadata()->set_name(options_.name);
  auto& labels = *node.mutable_metadata()->mutable_labels();
  labels["kubernetes.io/hostname"] = options_.name;
  labels["kubernetes.io/os"] = "linux";
  labels["kubernetes.io/arch"] = HostArchitecture();
  labels["beta.kubernetes.io/os"] = "linux";
  labels["beta.kubernetes.io/arch"] = HostArchitecture();
  for (const auto& [k, v] : options_.labels) labels[k] = v;
  for (const auto& t : options_.taints) *node.mutable_spec()->add_taints() = t;
  node.mutable_spec()->set_pod_cidr(options_.pod_cidr);
  node.mutable_spec()->add_pod_cidrs(options_.pod_cidr);
  *node.mutable_status() = BuildStatus(now);
  auto created = client_->Create<api::Node>("nodes", "", node);
  if (created.ok()) {
    Log().info("node {}: registered", options_.name);
  } else if (created.status().code() != absl::StatusCode::kAlreadyExists) {
    return created.status();
  } else {
    Log().info("node {}: already registered, taking it over", options_.name);
  }
  if (!options_.annotations.empty()) {
    const nlohmann::json patch = {{"metadata", {{"annotations", options_.annotations}}}};
    MKUBE_RETURN_IF_ERROR(
        client_->Patch<api::Node>("nodes", "", options_.name, patch.dump()).status());
  }
  MKUBE_RETURN_IF_ERROR(PostStatus(BuildStatus(now), now));
  // The Lease too, so that a registered node is never seen without one (the loop renews it).
  if (auto st = RenewLease(now); st.ok()) renewed_at_ = now;
  if (auto current = client_->Get<api::Node>("nodes", "", options_.name); current.ok()) {
    events_->Record(*current, "Normal", "Starting", "Starting kubelet.");
    for (const char* condition : {"NodeHasSufficientMemory", "NodeHasNoDiskPressure",
                                  "NodeHasSufficientPID", "NodeReady"}) {
      events_->Record(*current, "Normal", condition,
                      fmt::format("Node {} status is now: {}", options_.name, condition));
    }
  }
  return absl::OkStatus();
}

absl::Status NodeStatusManager::PostStatus(api::NodeStatus status, absl::Time now) {
  api::Node node;
  node.mutable_metadata()->set_name(options_.name);
  *node.mutable_status() = std::move(status);
  MKUBE_RETURN_IF_ERROR(client_->Update<api::Node>("nodes", "", node, "status").status());
  posted_ = Unstamped(node.status());
  posted_at_ = now;
  return absl::OkStatus();
}

absl::Status NodeStatusManager::RenewLease(absl::Time now) {
  api::Lease lease;
  lease.set_api_version("coordination.k8s.io/v1");
  lease.set_kind("Lease");
  lease.mutable_metadata()->set_name(options_.name);
  lease.mutable_metadata()->set_namespace_("kube-node-lease");
  lease.mutable_spec()->set_holder_identity(options_.name);
  lease.mutable_spec()->set_lease_duration_seconds(options_.lease_duration_seconds);
  lease.mutable_spec()->set_renew_time(MicroTime(now));
  if (lease_version_.empty()) {
    auto cur = client_->Get<api::Lease>("leases", "kube-node-lease", options_.name);
    if (cur.ok()) {
      lease_version_ = cur->metadata().resource_version();
    } else if (cur.status().code() == absl::StatusCode::kNotFound) {
      lease.mutable_spec()->set_acquire_time(MicroTime(now));
      MKUBE_ASSIGN_OR_RETURN(auto created,
                             client_->Create<api::Lease>("leases", "kube-node-lease", lease));
      lease_version_ = created.metadata().resource_version();
      return absl::OkStatus();
    } else {
      return cur.status();
    }
  }
  lease.mutable_metadata()->set_resource_version(lease_version_);
  auto updated = client_->Update<api::Lease>("leases", "kube-node-lease", lease);
  if (!updated.ok()) {
    lease_version_.clear();  // read it again next time (someone else wrote it)
    return updated.status();
  }
  lease_version_ = updated->metadata().resource_version();
  return absl::OkStatus();
}

void NodeStatusManager::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void NodeStatusManager::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void NodeStatusManager::Sync() {
  const absl::Time now = clock_->Now();
  if (now - renewed_at_ >= options_.renew_interval) {
    if (auto st = RenewLease(now); st.ok()) {
      renewed_at_ = now;
    } else {
      Log().warn("node {}: lease renewal failed: {}", options_.name, st.ToString());
    }
  }
  api::NodeStatus status = BuildStatus(now);
  if (!posted_ || !api::Equal(Unstamped(status), *posted_) ||
      now - posted_at_ >= options_.status_interval) {
    if (auto st = PostStatus(std::move(status), now); !st.ok()) {
      Log().warn("node {}: status update failed: {}", options_.name, st.ToString());
    }
  }
}

void NodeStatusManager::Loop() {
  for (;;) {
    Sync();
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    // Images change when pods start: look again sooner than the lease needs.
    if (clock_->AwaitWithTimeout(&mu_, absl::Condition(&stopping),
                                 std::min(options_.renew_interval, absl::Seconds(2)))) {
      return;
    }
  }
}

}  // namespace mkube::agent::node
