#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/pods/port_proxy.h"
#include "client/event_recorder.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::pods {

// The pods' network on this node: each pod's address, handed out from the node's pod CIDR,
// and its hostPorts, forwarded to that address (TCP only).
class PodNetwork {
 public:
  // Pod addresses come from `pod_cidr` (a.b.c.d/len); `node_ip` is the node's own.
  PodNetwork(std::string node_ip, const std::string& pod_cidr, client::EventRecorder* events);

  // A free pod address: `wanted` (the one the pod had) when it is free; the node's own when
  // none is left.
  std::string AllocateIp(const std::string& wanted) ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseIp(const std::string& ip) ABSL_LOCKS_EXCLUDED(mu_);

  // Forwards the pod's hostPorts to its address `ip`, and stops forwarding them.
  void OpenHostPorts(const api::Pod& pod, const std::string& ip) ABSL_LOCKS_EXCLUDED(mu_);
  void CloseHostPorts(const std::string& uid) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string node_ip_;
  client::EventRecorder* events_;
  // Set by the constructor, read-only after it: no lock needed.
  uint32_t ip_base_ = 0, ip_count_ = 0;

  absl::Mutex mu_;
  std::set<uint32_t> ips_in_use_ ABSL_GUARDED_BY(mu_);
  // The hostPorts forwarded to each pod (PortProxy ids), by pod uid.
  std::map<std::string, std::vector<std::string>> host_ports_ ABSL_GUARDED_BY(mu_);
  PortProxy proxy_;
};

}  // namespace mkube::agent::pods
