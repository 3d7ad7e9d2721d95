#include "scheduler/plugins/node_ports.h"

#include <vector>

namespace mkube::scheduler::plugins {
namespace {

struct HostPort {
  std::string ip, protocol;
  int32_t port;
};

std::vector<HostPort> HostPorts(const api::Pod& pod) {
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

bool Conflict(const HostPort& a, const HostPort& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  return a.ip == b.ip || a.ip == "0.0.0.0" || b.ip == "0.0.0.0";
}

}  // namespace

framework::Status NodePorts::Filter(const framework::CycleState&, const api::Pod& pod,
                                    const framework::NodeInfo& node) const {
  const std::vector<HostPort> wanted = HostPorts(pod);
  if (wanted.empty()) return {};
  for (const auto& other : node.pods) {
    for (const HostPort& used : HostPorts(*other)) {
      for (const HostPort& want : wanted) {
        if (Conflict(want, used)) return framework::Status::Unschedulable(kReason);
      }
    }
  }
  return {};
}

}  // namespace mkube::scheduler::plugins
