#include "agent/pods/pod_network.h"

#include <arpa/inet.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/log.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace mkube::agent::pods {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& log = log::Logger("pods");
  return log;
}

}  // namespace

PodNetwork::PodNetwork(std::string node_ip, const std::string& pod_cidr,
                       client::EventRecorder* events)
    : node_ip_(std::move(node_ip)), events_(events) {
  // a.b.c.d/len: hosts from .2 (the first is kept for the network) to the last but one.
  std::vector<std::string> parts = absl::StrSplit(pod_cidr, '/');
  in_addr addr{};
  int len = 0;
  if (parts.size() == 2 && inet_pton(AF_INET, parts[0].c_str(), &addr) == 1 &&
      absl::SimpleAtoi(parts[1], &len) && len >= 8 && len <= 30) {
    ip_count_ = (1u << (32 - len)) - 3;
    ip_base_ = (ntohl(addr.s_addr) & ~((1u << (32 - len)) - 1)) + 2;
  }
}

std::string PodNetwork::AllocateIp(const std::string& wanted) {
  absl::MutexLock lock(&mu_);
  in_addr want{};
  if (!wanted.empty() && inet_pton(AF_INET, wanted.c_str(), &want) == 1) {
    const uint32_t ip = ntohl(want.s_addr);
    if (ip >= ip_base_ && ip < ip_base_ + ip_count_ && ips_in_use_.insert(ip).second) return wanted;
  }
  for (uint32_t i = 0; i < ip_count_; ++i) {
    const uint32_t ip = ip_base_ + i;
    if (ips_in_use_.insert(ip).second) {
      in_addr addr{htonl(ip)};
      char buf[INET_ADDRSTRLEN];
      return inet_ntop(AF_INET, &addr, buf, sizeof buf);
    }
  }
  return node_ip_;  // out of pod addresses: share the node's
}

void PodNetwork::ReleaseIp(const std::string& ip) {
  if (ip.empty() || ip == node_ip_) return;
  in_addr addr{};
  if (inet_pton(AF_INET, ip.c_str(), &addr) != 1) return;
  absl::MutexLock lock(&mu_);
  ips_in_use_.erase(ntohl(addr.s_addr));
}

void PodNetwork::OpenHostPorts(const api::Pod& pod, const std::string& ip) {
  // On the node's own network the pod's process holds the port itself.
  if (pod.spec().host_network() || ip == node_ip_) return;
  const auto& meta = pod.metadata();
  std::vector<std::string> opened;
  for (const auto& c : pod.spec().containers()) {
    for (const auto& p : c.ports()) {
      if (p.host_port() <= 0) continue;
      if (!p.protocol().empty() && p.protocol() != "TCP") {
        Log().warn("pod {}/{}: hostPort {}/{} is not forwarded (only TCP is)", meta.namespace_(),
                   meta.name(), p.host_port(), p.protocol());
        continue;
      }
      // Every address means the node's own: nothing listens beyond it unless asked.
      const std::string host_ip =
          p.host_ip().empty() || p.host_ip() == "0.0.0.0" ? node_ip_ : p.host_ip();
      const std::string id = fmt::format("{}/{}:{}", meta.uid(), host_ip, p.host_port());
      const int target = p.container_port() > 0 ? p.container_port() : p.host_port();
      if (auto st = proxy_.Open(id, host_ip, p.host_port(), ip, target); !st.ok()) {
        events_->Record(pod, "Warning", "FailedHostPort", std::string(st.message()));
        Log().warn("pod {}/{}: {}", meta.namespace_(), meta.name(), st.ToString());
        continue;
      }
      opened.push_back(id);
      Log().info("pod {}/{}: hostPort {}:{} forwarded to {}:{}", meta.namespace_(), meta.name(),
                 host_ip, p.host_port(), ip, target);
    }
  }
  if (opened.empty()) return;
  absl::MutexLock lock(&mu_);
  auto& ids = host_ports_[meta.uid()];
  ids.insert(ids.end(), opened.begin(), opened.end());
}

void PodNetwork::CloseHostPorts(const std::string& uid) {
  std::vector<std::string> ids;
  {
    absl::MutexLock lock(&mu_);
    auto it = host_ports_.find(uid);
    if (it == host_ports_.end()) return;
    ids = std::move(it->second);
    host_ports_.erase(it);
  }
  for (const auto& id : ids) proxy_.Close(id);
}

}  // namespace mkube::agent::pods
