#include "scheduler/framework/node_info.h"

#include <algorithm>

namespace mkube::scheduler::framework {
namespace {

bool Ended(const api::Pod& pod) {
  const std::string& phase = pod.status().phase();
  return phase == "Succeeded" || phase == "Failed";
}

void Erase(std::vector<AffinityPodPtr>& pods, const std::string& key) {
  auto it = std::find_if(pods.begin(), pods.end(),
                         [&](const AffinityPodPtr& p) { return PodKey(*p->pod) == key; });
  if (it != pods.end()) pods.erase(it);
}

}  // namespace

std::vector<HostPort> HostPortsOf(const api::Pod& pod) {
  std::vector<HostPort> out;
  for (const auto& c : pod.spec().containers()) {
    for (const auto& p : c.ports()) {
      if (p.host_port() <= 0) continue;
      out.push_back({p.host_ip().empty() ? "0.0.0.0" : p.host_ip(),
                     p.protocol().empty() ? "TCP" : p.protocol(), p.host_port()});
    }
  }
  return out;
}

bool PortsConflict(const HostPort& a, const HostPort& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  return a.ip == b.ip || a.ip == "0.0.0.0" || b.ip == "0.0.0.0";
}

std::string PodKey(const api::Pod& pod) {
  return pod.metadata().namespace_() + "/" + pod.metadata().name();
}

void NodeInfo::SetNode(NodePtr node) {
  node_ = std::move(node);
  allocatable_ = Allocatable(*node_);
  images_.clear();
  for (const auto& image : node_->status().images()) {
    for (const auto& name : image.names()) images_[name] = image.size_bytes();
  }
}

void NodeInfo::Account(const api::Pod& pod, int sign) {
  for (const auto& [name, milli] : PodRequests(pod)) {
    int64_t& total = requested_[name];
    total += sign * milli;
    if (total == 0) requested_.erase(name);
  }
  const NonZero nz = NonZeroRequests(pod);
  non_zero_cpu_ += sign * nz.cpu;
  non_zero_memory_ += sign * nz.memory;
  for (const HostPort& port : HostPortsOf(pod)) {
    if (sign > 0) {
      used_ports_.push_back(port);
    } else if (auto it = std::find(used_ports_.begin(), used_ports_.end(), port);
               it != used_ports_.end()) {
      used_ports_.erase(it);
    }
  }
}

void NodeInfo::AddPod(PodPtr pod) {
  if (Ended(*pod)) return;
  Account(*pod, +1);
  const auto& a = pod->spec().affinity();
  if (a.has_pod_affinity() || a.has_pod_anti_affinity()) {
    // Terms that cannot be parsed are left out: they select nothing.
    auto terms = ParseAffinityTerms(*pod);
    auto info = std::make_shared<AffinityPod>(
        AffinityPod{pod, terms.ok() ? std::move(*terms) : AffinityTerms()});
    if (!info->terms.empty()) pods_with_affinity_.push_back(info);
    if (!info->terms.required_anti_affinity.empty()) {
      pods_with_required_anti_affinity_.push_back(std::move(info));
    }
  }
  pods_.push_back(std::move(pod));
}

bool NodeInfo::RemovePod(const std::string& key) {
  auto it =
      std::find_if(pods_.begin(), pods_.end(), [&](const PodPtr& p) { return PodKey(*p) == key; });
  if (it == pods_.end()) return false;
  Account(**it, -1);
  Erase(pods_with_affinity_, key);
  Erase(pods_with_required_anti_affinity_, key);
  pods_.erase(it);
  return true;
}

}  // namespace mkube::scheduler::framework
