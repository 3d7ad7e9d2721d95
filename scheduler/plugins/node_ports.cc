#include "scheduler/plugins/node_ports.h"

#include <vector>

namespace mkube::scheduler::plugins {
namespace {

struct Wanted : framework::CycleState::Data {
  std::vector<framework::HostPort> ports;
};

}  // namespace

framework::Status NodePorts::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                       const framework::Snapshot&) const {
  auto wanted = std::make_unique<Wanted>();
  wanted->ports = framework::HostPortsOf(pod);
  if (wanted->ports.empty()) return framework::Status::Skip();  // no host port to clash
  state.Write(kName, std::move(wanted));
  return {};
}

framework::Status NodePorts::Filter(const framework::CycleState& state, const api::Pod& pod,
                                    const framework::NodeInfo& node) const {
  const Wanted* pre = state.Read<Wanted>(kName);
  Wanted own;
  if (!pre) {  // run without its PreFilter
    own.ports = framework::HostPortsOf(pod);
    pre = &own;
  }
  for (const framework::HostPort& used : node.used_ports()) {
    for (const framework::HostPort& want : pre->ports) {
      if (framework::PortsConflict(want, used)) return framework::Status::Unschedulable(kReason);
    }
  }
  return {};
}

}  // namespace mkube::scheduler::plugins
