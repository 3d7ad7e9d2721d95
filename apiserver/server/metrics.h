#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/kinds.h"
#include "apiserver/registry/registry.h"
#include "apiserver/server/agents.h"
#include "proto/agent/stats.pb.h"
#include "proto/apiserver/apiserver.pb.h"

namespace mkube::apiserver::server {

// metrics.k8s.io: NodeMetrics and PodMetrics. Each request asks the agents concerned for
// what they measured last (as metrics-server asks kubelets, but when asked rather than on a
// timer), and nothing is stored. Which nodes and pods a request covers, and their names and
// labels, come from the apiserver's own objects (selectors included); the figures from the
// agents. Requests wait on an API worker thread, so the deadline is short (2 s). A node whose
// agent does not answer in time is left out, as metrics-server leaves
// out a node it could not scrape; so is a pod its agent has not measured twice yet.
class MetricsApi {
 public:
  MetricsApi(registry::Registry* registry, Agents* agents,
             absl::Duration timeout = absl::Seconds(2))
      : registry_(registry), agents_(agents), timeout_(timeout) {}

  // For a kind that is `measured`.
  absl::StatusOr<std::string> Get(const api::KindInfo& kind, const std::string& ns,
                                  const std::string& name);
  absl::StatusOr<ListReply> List(const api::KindInfo& kind, const ListRequest& req);

 private:
  // The summaries of the agents of `nodes` (by node name), asked all at once.
  std::map<std::string, agent::SummaryReply> Summaries(const std::vector<api::Node>& nodes);
  std::vector<api::NodeMetrics> NodeMetrics(const std::vector<api::Node>& nodes);
  std::vector<api::PodMetrics> PodMetrics(const std::vector<api::Pod>& pods);

  registry::Registry* registry_;
  Agents* agents_;
  const absl::Duration timeout_;
};

}  // namespace mkube::apiserver::server
