#include "controller/garbage/pod_gc.h"

#include <set>

#include "base/log.h"
#include "base/status.h"
#include "controller/internal/indexes.h"

namespace mkube::controller::garbage {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("pod-garbage-collector");
  return logger;
}

constexpr char kSweep[] = "sweep";
constexpr char kNodePrefix[] = "node/";

}  // namespace

PodGC::PodGC(client::ApiClient* client, client::Informer<api::Node>* nodes,
             client::Informer<api::Pod>* pods, client::Clock* clock, absl::Duration period)
    : Controller("pod-garbage-collector", clock),
      client_(client),
      nodes_(nodes),
      pods_(pods),
      period_(period) {
  IndexPodsByNode(pods_);
  nodes_->AddHandlers({.on_delete = [this](const std::shared_ptr<const api::Node>& n) {
    queue().Add(kNodePrefix + n->metadata().name());
  }});
  queue().AddAfter(kSweep, period_);
}

absl::StatusOr<bool> PodGC::NodeExists(const std::string& name) const {
  if (nodes_->Get(name)) return true;
  auto node = client_->Get<api::Node>("nodes", "", name);
  if (node.ok()) return true;
  if (node.status().code() == absl::StatusCode::kNotFound) return false;
  return node.status();
}

absl::Status PodGC::DeletePodsOf(const std::string& node) {
  for (const auto& pod : pods_->ByIndex(kByNode, node)) {
    Log().info("{}/{}: its node {} is gone: deleting it", pod->metadata().namespace_(),
               pod->metadata().name(), node);
    apiserver::DeleteRequest req;
    req.set_resource("pods");
    req.set_namespace_(pod->metadata().namespace_());
    req.set_name(pod->metadata().name());
    req.set_grace_period_seconds(0);
    req.mutable_preconditions()->set_uid(pod->metadata().uid());
    auto r = client_->Delete(req);
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound &&
        r.status().code() != absl::StatusCode::kAborted) {
      return r.status();
    }
  }
  return absl::OkStatus();
}

absl::Status PodGC::Sync(const std::string& key) {
  std::set<std::string> candidates;
  if (key == kSweep) {
    queue().AddAfter(kSweep, period_);
    for (const auto& pod : pods_->List()) {
      const std::string& node = pod->spec().node_name();
      if (!node.empty() && !nodes_->Get(node)) candidates.insert(node);
    }
  } else if (key.starts_with(kNodePrefix)) {
    candidates.insert(key.substr(sizeof(kNodePrefix) - 1));
  }
  for (const auto& node : candidates) {
    MKUBE_ASSIGN_OR_RETURN(auto exists, NodeExists(node));
    if (exists) continue;
    MKUBE_RETURN_IF_ERROR(DeletePodsOf(node));
  }
  return absl::OkStatus();
}

}  // namespace mkube::controller::garbage
