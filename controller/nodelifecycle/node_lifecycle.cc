#include "controller/nodelifecycle/node_lifecycle.h"

#include <algorithm>

#include "api/object.h"
#include "base/log.h"
#include "base/status.h"
#include "controller/internal/indexes.h"
#include "fmt/format.h"

namespace mkube::controller::nodelifecycle {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("node-lifecycle-controller");
  return logger;
}

constexpr char kMonitor[] = "monitor";
constexpr char kNodePrefix[] = "node/";

const api::Condition* NodeCondition(const api::Node& node, const std::string& type) {
  for (const auto& c : node.status().conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

std::string ReadyStatus(const api::Node& node) {
  const api::Condition* c = NodeCondition(node, "Ready");
  return c ? c->status() : "";
}

std::string ZoneOf(const api::Node& node) {
  const auto& labels = node.metadata().labels();
  auto region = labels.find("topology.kubernetes.io/region");
  auto zone = labels.find("topology.kubernetes.io/zone");
  return (region == labels.end() ? "" : region->second) + ":" +
         (zone == labels.end() ? "" : zone->second);
}

bool Managed(const api::Taint& t) {
  return t.key() == kNotReadyTaint || t.key() == kUnreachableTaint ||
         t.key() == kUnschedulableTaint;
}

}  // namespace

NodeLifecycleController::NodeLifecycleController(
    client::ApiClient* client, client::Informer<api::Node>* nodes,
    client::Informer<api::Lease>* leases, client::Informer<api::Pod>* pods,
    client::EventRecorder* events, client::Clock* clock, NodeLifecycleOptions options)
    : Controller("node-lifecycle-controller", clock),
      client_(client),
      nodes_(nodes),
      leases_(leases),
      pods_(pods),
      events_(events),
      options_(options) {
  IndexPodsByNode(pods_);
  auto changed = [this](const std::shared_ptr<const api::Node>& n) {
    queue().Add(kNodePrefix + n->metadata().name());
  };
  nodes_->AddHandlers({
      .on_add = changed,
      .on_update = [changed](const auto&, const auto& n) { changed(n); },
      .on_delete =
          [this](const std::shared_ptr<const api::Node>& n) {
            absl::MutexLock lock(&mu_);
            health_.erase(n->metadata().name());
          },
  });
  queue().Add(kMonitor);
}

absl::Status NodeLifecycleController::Sync(const std::string& key) {
  if (key == kMonitor) {
    queue().AddAfter(kMonitor, options_.monitor_period);
    return Monitor();
  }
  if (!key.starts_with(kNodePrefix)) return absl::OkStatus();
  auto node = nodes_->Get(key.substr(sizeof(kNodePrefix) - 1));
  if (!node) return absl::OkStatus();
  bool tainted = false;
  // Taints go (and NoSchedule ones come) at once; NoExecute ones come with the monitor's pass.
  return ReconcileTaints(*node, /*may_taint=*/false, &tainted);
}

absl::StatusOr<std::shared_ptr<const api::Node>> NodeLifecycleController::CheckHealth(
    const std::shared_ptr<const api::Node>& cached, absl::Time now) {
  const api::Node& node = *cached;
  const std::string& name = node.metadata().name();
  const api::Condition* ready = NodeCondition(node, "Ready");
  auto lease = leases_->Get("kube-node-lease/" + name);
  bool lost = false;
  {
    absl::MutexLock lock(&mu_);
    auto [it, fresh] = health_.try_emplace(name);
    Health& h = it->second;
    const std::string renew = lease ? lease->spec().renew_time() : "";
    const std::string heartbeat = ready ? ready->last_heartbeat_time() : "";
    if (fresh || renew != h.renew_time || heartbeat != h.heartbeat) {
      h.probe = now;
      h.renew_time = renew;
      h.heartbeat = heartbeat;
    }
    lost = now - h.probe > options_.grace_period;
  }
  if (!lost || (ready && ready->status() == "Unknown")) return cached;
  api::Node updated = node;
  const std::string stamp = api::Rfc3339(now);
  auto* conditions = updated.mutable_status()->mutable_conditions();
  if (!ready) {
    auto* c = conditions->Add();
    c->set_type("Ready");
    c->set_status("Unknown");
    c->set_reason("NodeStatusNeverUpdated");
    c->set_message("Kubelet never posted node status.");
    c->set_last_heartbeat_time(api::Rfc3339(absl::UnixEpoch()));
    c->set_last_transition_time(stamp);
  }
  for (auto& c : *conditions) {
    if (c.type() != "Ready" && c.type() != "MemoryPressure" && c.type() != "DiskPressure" &&
        c.type() != "PIDPressure") {
      continue;
    }
    if (c.status() == "Unknown") continue;
    c.set_status("Unknown");
    c.set_reason("NodeStatusUnknown");
    c.set_message("Kubelet stopped posting node status.");
    c.set_last_transition_time(stamp);
  }
  MKUBE_ASSIGN_OR_RETURN(auto r, client_->Update<api::Node>("nodes", "", updated, "status"));
  Log().info("node {}: no lease renewal for {}: Ready is now Unknown", name,
             absl::FormatDuration(options_.grace_period));
  if (!ready || ready->status() == "True") {
    events_->Record(r, "Normal", "NodeNotReady",
                    fmt::format("Node {} status is now: NodeNotReady", name));
  }
  return std::make_shared<const api::Node>(std::move(r));
}

absl::Status NodeLifecycleController::MarkPodsNotReady(const api::Node& node, absl::Time now) {
  const bool lost = ReadyStatus(node) == "Unknown";
  absl::Status error;
  for (const auto& pod : pods_->ByIndex(kByNode, node.metadata().name())) {
    const std::string& phase = pod->status().phase();
    if (phase == "Succeeded" || phase == "Failed") continue;
    api::Pod updated = *pod;
    bool changed = false;
    for (auto& c : *updated.mutable_status()->mutable_conditions()) {
      if (c.type() != "Ready" || c.status() == "False") continue;
      c.set_status("False");
      c.set_last_transition_time(api::Rfc3339(now));
      changed = true;
    }
    // Its node cannot say how it is: kubectl shows it as Unknown.
    if (lost && updated.status().reason() != "NodeLost") {
      updated.mutable_status()->set_reason("NodeLost");
      updated.mutable_status()->set_message(
          fmt::format("Node {} which was running pod {} is unresponsive", node.metadata().name(),
                      pod->metadata().name()));
      changed = true;
    }
    if (!changed) continue;
    auto r = client_->Update<api::Pod>("pods", pod->metadata().namespace_(), updated, "status");
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound && error.ok()) {
      error = r.status();
      continue;
    }
    events_->Record(*pod, "Warning", "NodeNotReady", "Node is not ready");
  }
  return error;
}

bool NodeLifecycleController::MayTaint(const std::string& zone, ZoneState state,
                                       size_t zone_size, absl::Time now) {
  double rate = options_.eviction_rate;
  if (state == ZoneState::kPartialDisruption) {
    rate = static_cast<int>(zone_size) > options_.large_cluster_threshold
               ? options_.secondary_eviction_rate
               : 0;
  }
  if (rate <= 0) return false;
  absl::MutexLock lock(&mu_);
  auto [it, fresh] = next_taint_.try_emplace(zone, absl::InfinitePast());
  if (now < it->second) return false;
  it->second = now + absl::Seconds(1.0 / rate);
  return true;
}

absl::Status NodeLifecycleController::Monitor() {
  const absl::Time now = clock_->Now();
  // The cached objects, or what this pass wrote over them (not copied: there are thousands).
  std::vector<std::shared_ptr<const api::Node>> nodes;
  absl::Status error;
  for (auto& cached : nodes_->List()) {
    auto node = CheckHealth(cached, now);
    if (!node.ok()) {
      if (error.ok()) error = node.status();
      nodes.push_back(std::move(cached));
      continue;
    }
    if (ReadyStatus(**node) != "True") {
      if (auto st = MarkPodsNotReady(**node, now); !st.ok() && error.ok()) error = st;
    }
    nodes.push_back(std::move(*node));
  }
  // Zones, and how many of their nodes are ready.
  struct Zone {
    int ready = 0, not_ready = 0;
    ZoneState state = ZoneState::kNormal;
  };
  std::map<std::string, Zone> zones;
  for (const auto& n : nodes) {
    Zone& z = zones[ZoneOf(*n)];
    (ReadyStatus(*n) == "True" ? z.ready : z.not_ready)++;
  }
  bool all_disrupted = !zones.empty();
  for (auto& [name, z] : zones) {
    if (z.ready == 0 && z.not_ready > 0) {
      z.state = ZoneState::kFullDisruption;
    } else if (z.not_ready > 2 &&
               static_cast<double>(z.not_ready) / (z.ready + z.not_ready) >=
                   options_.unhealthy_zone_threshold) {
      z.state = ZoneState::kPartialDisruption;
    }
    all_disrupted &= z.state == ZoneState::kFullDisruption;
  }
  {
    absl::MutexLock lock(&mu_);
    if (all_disrupted != all_disrupted_) {
      Log().warn(all_disrupted ? "every node is not ready: evicting nothing until one is back"
                               : "a node is ready again: evictions resume");
    }
    all_disrupted_ = all_disrupted;
  }
  for (const auto& n : nodes) {
    const std::string zone = ZoneOf(*n);
    const Zone& z = zones[zone];
    bool tainted = false;
    const bool may = ReadyStatus(*n) != "True" && ReadyStatus(*n) != "" &&
                     MayTaint(zone, z.state, static_cast<size_t>(z.ready + z.not_ready), now);
    if (auto st = ReconcileTaints(*n, may, &tainted); !st.ok() && error.ok()) error = st;
    if (may && !tainted) {
      absl::MutexLock lock(&mu_);
      next_taint_[zone] = absl::InfinitePast();  // the token was not used
    }
  }
  return error;
}

absl::Status NodeLifecycleController::ReconcileTaints(const api::Node& node, bool may_taint,
                                                      bool* tainted) {
  const std::string ready = ReadyStatus(node);
  bool all_disrupted = false;
  {
    absl::MutexLock lock(&mu_);
    all_disrupted = all_disrupted_;
  }
  // What the node's state calls for, by key and effect.
  std::vector<std::pair<std::string, std::string>> wanted;
  const char* condition_taint = ready == "False"     ? kNotReadyTaint
                                : ready == "Unknown" ? kUnreachableTaint
                                                     : nullptr;
  if (condition_taint) {
    wanted.emplace_back(condition_taint, "NoSchedule");
    if (!all_disrupted) wanted.emplace_back(condition_taint, "NoExecute");
  }
  if (node.spec().unschedulable()) wanted.emplace_back(kUnschedulableTaint, "NoSchedule");
  auto is_wanted = [&wanted](const api::Taint& t) {
    return std::find(wanted.begin(), wanted.end(), std::make_pair(t.key(), t.effect())) !=
           wanted.end();
  };
  api::Node updated = node;
  auto* taints = updated.mutable_spec()->mutable_taints();
  bool changed = false;
  for (int i = taints->size() - 1; i >= 0; --i) {
    if (Managed(taints->Get(i)) && !is_wanted(taints->Get(i))) {
      taints->DeleteSubrange(i, 1);
      changed = true;
    }
  }
  // (No structured binding: clang 14's lambdas cannot capture one.)
  for (const auto& want : wanted) {
    const std::string& key = want.first;
    const std::string& effect = want.second;
    const bool present = std::any_of(taints->begin(), taints->end(), [&](const api::Taint& t) {
      return t.key() == key && t.effect() == effect;
    });
    if (present) continue;
    if (effect == "NoExecute" && !may_taint) continue;
    api::Taint* t = taints->Add();
    t->set_key(key);
    t->set_effect(effect);
    if (effect == "NoExecute") {
      t->set_time_added(api::Rfc3339(clock_->Now()));
      *tainted = true;
    }
    changed = true;
  }
  if (!changed) return absl::OkStatus();
  auto r = client_->Update<api::Node>("nodes", "", updated);
  if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
  return absl::OkStatus();
}

}  // namespace mkube::controller::nodelifecycle
