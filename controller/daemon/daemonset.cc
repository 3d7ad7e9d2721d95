#include "controller/daemon/daemonset.h"

#include <algorithm>
#include <set>

#include "api/labels.h"
#include "api/object.h"
#include "api/taints.h"
#include "base/status.h"
#include "controller/internal/claim.h"
#include "controller/internal/indexes.h"
#include "controller/internal/int_or_percent.h"
#include "controller/internal/owner.h"
#include "controller/internal/template_hash.h"
#include "fmt/format.h"

namespace mkube::controller::daemon {
namespace {

bool TermMatches(const api::NodeSelectorTerm& term, const api::Node& node) {
  if (term.match_expressions().empty() && term.match_fields().empty()) return false;
  auto sel = api::Selector::FromNodeSelectorTerm(term);
  if (!sel.ok() || !sel->Matches(node.metadata().labels())) return false;
  for (const auto& f : term.match_fields()) {
    if (f.key() != "metadata.name") return false;
    const bool in = std::find(f.values().begin(), f.values().end(), node.metadata().name()) !=
                    f.values().end();
    if ((f.operator_() == "In") != in) return false;
  }
  return true;
}

// The node a daemon pod is for: where it is bound, or, before the scheduler has bound it, the
// node its affinity names (Kubernetes' GetTargetNodeName).
std::string TargetNode(const api::Pod& pod) {
  if (!pod.spec().node_name().empty()) return pod.spec().node_name();
  for (const auto& term : pod.spec().affinity().node_affinity()
                              .required_during_scheduling_ignored_during_execution()
                              .node_selector_terms()) {
    for (const auto& f : term.match_fields()) {
      if (f.key() == "metadata.name" && f.operator_() == "In" && f.values_size() == 1) {
        return f.values(0);
      }
    }
  }
  return "";
}

}  // namespace

void AddDaemonTolerations(api::PodSpec* spec) {
  auto add = [spec](const char* key, const char* effect) {
    for (const auto& t : spec->tolerations()) {
      if (t.key() == key && t.effect() == effect && t.operator_() == "Exists" &&
          !t.has_toleration_seconds()) {
        return;
      }
    }
    api::Toleration* t = spec->add_tolerations();
    t->set_key(key);
    t->set_operator_("Exists");
    t->set_effect(effect);
  };
  add("node.kubernetes.io/not-ready", "NoExecute");
  add("node.kubernetes.io/unreachable", "NoExecute");
  add("node.kubernetes.io/disk-pressure", "NoSchedule");
  add("node.kubernetes.io/memory-pressure", "NoSchedule");
  add("node.kubernetes.io/pid-pressure", "NoSchedule");
  add("node.kubernetes.io/unschedulable", "NoSchedule");
  if (spec->host_network()) add("node.kubernetes.io/network-unavailable", "NoSchedule");
}

bool ShouldRun(const api::PodTemplateSpec& tmpl, const api::Node& node) {
  const api::PodSpec& spec = tmpl.spec();
  if (!api::Selector::FromMap(spec.node_selector()).Matches(node.metadata().labels())) {
    return false;
  }
  const auto& required =
      spec.affinity().node_affinity().required_during_scheduling_ignored_during_execution();
  if (!required.node_selector_terms().empty() &&
      std::none_of(required.node_selector_terms().begin(), required.node_selector_terms().end(),
                   [&](const api::NodeSelectorTerm& t) { return TermMatches(t, node); })) {
    return false;
  }
  api::PodSpec with = spec;
  AddDaemonTolerations(&with);
  for (const auto& taint : node.spec().taints()) {
    if (taint.effect() != "NoSchedule" && taint.effect() != "NoExecute") continue;
    if (!api::Tolerated(with.tolerations(), taint)) return false;
  }
  return true;
}

namespace {

// What a sync does node by node: where a daemon pod is missing, and which pods go (failed
// ones, extras, and those on nodes that should not run one).
struct NodesPlan {
  std::vector<std::string> create_on;
  std::vector<PodPtr> remove;
};

NodesPlan PlanNodes(const api::DaemonSet& ds,
                    const std::map<std::string, std::vector<PodPtr>>& by_node,
                    const std::vector<std::shared_ptr<const api::Node>>& nodes) {
  NodesPlan p;
  for (const auto& node : nodes) {
    const std::string& name = node->metadata().name();
    auto it = by_node.find(name);
    const std::vector<PodPtr> none;
    const std::vector<PodPtr>& pods = it == by_node.end() ? none : it->second;
    std::vector<PodPtr> alive;
    for (const auto& pod : pods) {
      // A failed daemon pod is replaced, as Kubernetes does.
      (pod->status().phase() == "Failed" ? p.remove : alive).push_back(pod);
    }
    if (!ShouldRun(ds.spec().template_(), *node)) {
      p.remove.insert(p.remove.end(), alive.begin(), alive.end());
    } else if (alive.empty()) {
      p.create_on.push_back(name);
    } else {
      p.remove.insert(p.remove.end(), alive.begin() + 1, alive.end());  // the oldest stays
    }
  }
  return p;
}

// Rolling update: old pods go node by node, at most maxUnavailable nodes down at once.
std::vector<PodPtr> RollingUpdateRemovals(
    const api::DaemonSet& ds, const std::string& hash,
    const std::map<std::string, std::vector<PodPtr>>& by_node,
    const std::vector<std::shared_ptr<const api::Node>>& nodes, absl::Time now) {
  int desired = 0, unavailable = 0;
  std::vector<PodPtr> old_available, old_unavailable;
  for (const auto& node : nodes) {
    if (!ShouldRun(ds.spec().template_(), *node)) continue;
    ++desired;
    auto it = by_node.find(node->metadata().name());
    if (it == by_node.end() || it->second.empty()) continue;
    const PodPtr& p = it->second.front();
    const bool available = IsAvailable(*p, ds.spec().min_ready_seconds(), now);
    if (!available) ++unavailable;
    auto h = p->metadata().labels().find(kRevisionHash);
    if (h == p->metadata().labels().end() || h->second != hash) {
      (available ? old_available : old_unavailable).push_back(p);
    }
  }
  api::IntOrString mu = ds.spec().update_strategy().rolling_update().max_unavailable();
  if (!ds.spec().update_strategy().rolling_update().has_max_unavailable()) mu.set_int_value(1);
  const int budget = std::max(1, Scaled(mu, desired, /*round_up=*/true));
  std::vector<PodPtr> remove = old_unavailable;
  for (const auto& p : old_available) {
    if (unavailable >= budget) break;
    remove.push_back(p);
    ++unavailable;
  }
  return remove;
}

}  // namespace

DaemonSetController::DaemonSetController(client::ApiClient* client,
                                         client::Informer<api::DaemonSet>* sets,
                                         client::Informer<api::Pod>* pods,
                                         client::Informer<api::Node>* nodes,
                                         client::EventRecorder* events, client::Clock* clock)
    : Controller("daemonset-controller", clock),
      client_(client),
      sets_(sets),
      pods_(pods),
      nodes_(nodes),
      pod_control_(client, events),
      expectations_(clock) {
  IndexByNamespace(sets_);
  IndexByController(pods_);
  IndexOrphans(pods_);
  sets_->AddHandlers({
      .on_add = [this](const DaemonSetPtr& d) { Enqueue(*d); },
      .on_update = [this](const DaemonSetPtr&, const DaemonSetPtr& d) { Enqueue(*d); },
      .on_delete =
          [this](const DaemonSetPtr& d) {
            expectations_.Delete(client::KeyOf(*d));
            Enqueue(*d);
          },
  });
  using NodePtr = std::shared_ptr<const api::Node>;
  nodes_->AddHandlers({
      .on_add = [this](const NodePtr&) { EnqueueAll(); },
      .on_update =
          [this](const NodePtr& o, const NodePtr& n) {
            if (!api::SameMap(o->metadata().labels(), n->metadata().labels()) ||
                !api::Equal(o->spec(), n->spec())) {
              EnqueueAll();
            }
          },
      .on_delete = [this](const NodePtr&) { EnqueueAll(); },
  });
  pods_->AddHandlers({
      .on_add = [this](const PodPtr& p) { OnPod(p, /*added=*/true, /*deleted=*/false); },
      .on_update = [this](const PodPtr&, const PodPtr& p) { OnPod(p, false, false); },
      .on_delete = [this](const PodPtr& p) { OnPod(p, false, true); },
  });
}

void DaemonSetController::EnqueueAll() {
  for (const auto& d : sets_->List()) Enqueue(*d);
}

void DaemonSetController::OnPod(const PodPtr& pod, bool added, bool deleted) {
  DaemonSetPtr d = ResolveControllerRef(*sets_, pod->metadata().namespace_(),
                                        ControllerOf(pod->metadata()), "DaemonSet");
  if (!d) return;
  const std::string key = client::KeyOf(*d);
  if (deleted || !pod->metadata().deletion_timestamp().empty()) {
    expectations_.DeletionObserved(key, client::KeyOf(*pod));
  } else if (added) {
    expectations_.CreationObserved(key);
  }
  Enqueue(*d);
}

absl::Status DaemonSetController::Sync(const std::string& key) {
  DaemonSetPtr ds = sets_->Get(key);
  if (!ds) {
    expectations_.Delete(key);
    return absl::OkStatus();
  }
  auto selector = api::Selector::FromLabelSelector(ds->spec().selector());
  if (!selector.ok() || selector->empty()) return absl::OkStatus();
  std::vector<PodPtr> candidates;
  for (auto& p : OwnedOrOrphaned(*pods_, ds->metadata())) {
    if (p->metadata().deletion_timestamp().empty()) candidates.push_back(std::move(p));
  }
  auto can_adopt = [this, &ds, &key]() -> absl::Status {
    MKUBE_ASSIGN_OR_RETURN(auto fresh,
                           client_->Get<api::DaemonSet>("daemonsets", ds->metadata().namespace_(),
                                                        ds->metadata().name()));
    if (fresh.metadata().uid() != ds->metadata().uid() ||
        !fresh.metadata().deletion_timestamp().empty()) {
      return absl::AbortedError(fmt::format("DaemonSet {} is gone or going", key));
    }
    return absl::OkStatus();
  };
  absl::Status error;
  auto mine = Claim<api::Pod>(client_, "pods", *ds, ControllerRef(*ds, "apps/v1", "DaemonSet"),
                              *selector, candidates, can_adopt, &error);
  std::map<std::string, std::vector<PodPtr>> by_node;
  for (const auto& p : mine) by_node[TargetNode(*p)].push_back(p);
  for (auto& [node, pods] : by_node) {
    std::sort(pods.begin(), pods.end(), [](const PodPtr& a, const PodPtr& b) {
      return a->metadata().creation_timestamp() < b->metadata().creation_timestamp();
    });
  }
  const std::string hash = TemplateHash(ds->spec().template_(), std::nullopt);
  const auto nodes = nodes_->List();
  if (error.ok() && expectations_.Satisfied(key) && ds->metadata().deletion_timestamp().empty()) {
    error = Manage(*ds, key, hash, by_node, nodes);
  }
  if (auto st = WriteStatus(*ds, hash, by_node, nodes); !st.ok() && error.ok()) error = st;
  return error;
}

absl::Status DaemonSetController::Manage(
    const api::DaemonSet& ds, const std::string& key, const std::string& hash,
    const std::map<std::string, std::vector<PodPtr>>& by_node,
    const std::vector<std::shared_ptr<const api::Node>>& nodes) {
  auto [create_on, remove] = PlanNodes(ds, by_node, nodes);
  if (remove.empty() && create_on.empty() &&
      ds.spec().update_strategy().type() != "OnDelete") {
    remove = RollingUpdateRemovals(ds, hash, by_node, nodes, clock_->Now());
  }
  if (!remove.empty()) return DeletePods(ds, key, remove);  // new pods come in the next sync
  if (create_on.empty()) return absl::OkStatus();
  return CreatePods(ds, key, hash, create_on);
}

absl::Status DaemonSetController::DeletePods(const api::DaemonSet& ds, const std::string& key,
                                             const std::vector<PodPtr>& remove) {
  std::set<std::string> keys;
  for (const auto& p : remove) keys.insert(client::KeyOf(*p));
  expectations_.ExpectDeletions(key, keys);
  absl::Status error;
  for (const auto& p : remove) {
    if (auto st = pod_control_.Delete(ds, *p); !st.ok()) {
      expectations_.DeletionObserved(key, client::KeyOf(*p));
      if (error.ok()) error = st;
    }
  }
  return error;
}

absl::Status DaemonSetController::CreatePods(const api::DaemonSet& ds, const std::string& key,
                                             const std::string& hash,
                                             const std::vector<std::string>& create_on) {
  api::PodTemplateSpec tmpl = ds.spec().template_();
  (*tmpl.mutable_metadata()->mutable_labels())[kRevisionHash] = hash;
  const api::Pod base = PodFromTemplate(tmpl, ds.metadata().namespace_(), ds.metadata().name(),
                                        ControllerRef(ds, "apps/v1", "DaemonSet"));
  expectations_.ExpectCreations(key, static_cast<int>(create_on.size()));
  absl::Status error;
  const int made = SlowStartBatch(
      static_cast<int>(create_on.size()),
      [&](int i, auto done) {
        api::Pod pod = base;
        AddDaemonTolerations(pod.mutable_spec());
        // The scheduler binds it, to this node only (Kubernetes' node affinity by name).
        auto* required = pod.mutable_spec()
                             ->mutable_affinity()
                             ->mutable_node_affinity()
                             ->mutable_required_during_scheduling_ignored_during_execution();
        required->clear_node_selector_terms();
        auto* field = required->add_node_selector_terms()->add_match_fields();
        field->set_key("metadata.name");
        field->set_operator_("In");
        field->add_values(create_on[i]);
        pod_control_.Create(ds, pod, std::move(done));
      },
      &error);
  for (int i = made; i < static_cast<int>(create_on.size()); ++i) {
    expectations_.CreationObserved(key);
  }
  return error;
}

absl::Status DaemonSetController::WriteStatus(
    const api::DaemonSet& ds, const std::string& hash,
    const std::map<std::string, std::vector<PodPtr>>& by_node,
    const std::vector<std::shared_ptr<const api::Node>>& nodes) {
  api::DaemonSetStatus status = ds.status();
  int desired = 0, current = 0, misscheduled = 0, ready = 0, updated = 0, available = 0;
  const absl::Time now = clock_->Now();
  for (const auto& node : nodes) {
    const bool should = ShouldRun(ds.spec().template_(), *node);
    auto it = by_node.find(node->metadata().name());
    const bool has = it != by_node.end() && !it->second.empty();
    if (should) ++desired;
    if (!has) continue;
    if (!should) {
      ++misscheduled;
      continue;
    }
    ++current;
    const PodPtr& p = it->second.front();
    if (IsReady(*p)) ++ready;
    if (IsAvailable(*p, ds.spec().min_ready_seconds(), now)) ++available;
    auto h = p->metadata().labels().find(kRevisionHash);
    if (h != p->metadata().labels().end() && h->second == hash) ++updated;
  }
  status.set_desired_number_scheduled(desired);
  status.set_current_number_scheduled(current);
  status.set_number_misscheduled(misscheduled);
  status.set_number_ready(ready);
  status.set_updated_number_scheduled(updated);
  status.set_number_available(available);
  status.set_number_unavailable(std::max(0, desired - available));
  status.set_observed_generation(ds.metadata().generation());
  if (api::Equal(status, ds.status())) return absl::OkStatus();
  api::DaemonSet copy = ds;
  *copy.mutable_status() = status;
  auto r = client_->Update<api::DaemonSet>("daemonsets", ds.metadata().namespace_(), copy, "status");
  if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
  return absl::OkStatus();
}

}  // namespace mkube::controller::daemon
