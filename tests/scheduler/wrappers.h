#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/api/core.pb.h"
#include "scheduler/framework/node_info.h"

// Tiny fluent builders for scheduler tests, as kube-scheduler's testing wrappers.
namespace mkube::scheduler::testing {

class PodWrapper {
 public:
  explicit PodWrapper(const std::string& name) { pod_.mutable_metadata()->set_name(name); }
  PodWrapper& NodeName(const std::string& node) {
    pod_.mutable_spec()->set_node_name(node);
    return *this;
  }
  PodWrapper& Toleration(const std::string& key, const std::string& op, const std::string& value,
                         const std::string& effect) {
    auto* t = pod_.mutable_spec()->add_tolerations();
    t->set_key(key);
    t->set_operator_(op);
    t->set_value(value);
    t->set_effect(effect);
    return *this;
  }
  // A container asking for `requests` ({"cpu", "500m"}, ...); init containers with `init`.
  PodWrapper& Container(const std::map<std::string, std::string>& requests, bool init = false) {
    auto* c =
        init ? pod_.mutable_spec()->add_init_containers() : pod_.mutable_spec()->add_containers();
    c->set_name((init ? "init" : "c") +
                std::to_string(pod_.spec().containers_size() + pod_.spec().init_containers_size()));
    c->set_image("busybox");
    for (const auto& [k, v] : requests) (*c->mutable_resources()->mutable_requests())[k] = v;
    return *this;
  }
  // A container exposing hostPort (protocol and hostIP may be empty).
  PodWrapper& HostPort(int32_t port, const std::string& protocol = "", const std::string& ip = "") {
    auto* c = pod_.mutable_spec()->add_containers();
    c->set_name("port" + std::to_string(pod_.spec().containers_size()));
    c->set_image("busybox");
    auto* p = c->add_ports();
    p->set_container_port(port);
    p->set_host_port(port);
    p->set_protocol(protocol);
    p->set_host_ip(ip);
    return *this;
  }
  PodWrapper& Overhead(const std::string& resource, const std::string& amount) {
    (*pod_.mutable_spec()->mutable_overhead())[resource] = amount;
    return *this;
  }
  PodWrapper& Phase(const std::string& phase) {
    pod_.mutable_status()->set_phase(phase);
    return *this;
  }
  PodWrapper& NodeSelector(const std::string& key, const std::string& value) {
    (*pod_.mutable_spec()->mutable_node_selector())[key] = value;
    return *this;
  }
  // One more required node affinity term (terms are ORed); each expression is
  // {key, operator, values...} (ANDed), on labels, or on fields with `fields`.
  PodWrapper& RequiredTerm(const std::vector<std::vector<std::string>>& expressions,
                           bool fields = false) {
    auto* term = pod_.mutable_spec()
                     ->mutable_affinity()
                     ->mutable_node_affinity()
                     ->mutable_required_during_scheduling_ignored_during_execution()
                     ->add_node_selector_terms();
    for (const auto& e : expressions) {
      auto* r = fields ? term->add_match_fields() : term->add_match_expressions();
      r->set_key(e.at(0));
      r->set_operator_(e.at(1));
      for (size_t i = 2; i < e.size(); ++i) r->add_values(e[i]);
    }
    return *this;
  }
  // One more preferred node affinity term of `weight`; expressions as RequiredTerm's.
  PodWrapper& PreferredTerm(int32_t weight,
                            const std::vector<std::vector<std::string>>& expressions) {
    auto* term = pod_.mutable_spec()
                     ->mutable_affinity()
                     ->mutable_node_affinity()
                     ->add_preferred_during_scheduling_ignored_during_execution();
    term->set_weight(weight);
    for (const auto& e : expressions) {
      auto* r = term->mutable_preference()->add_match_expressions();
      r->set_key(e.at(0));
      r->set_operator_(e.at(1));
      for (size_t i = 2; i < e.size(); ++i) r->add_values(e[i]);
    }
    return *this;
  }
  // A container running `image`, without requests.
  PodWrapper& Image(const std::string& image) {
    auto* c = pod_.mutable_spec()->add_containers();
    c->set_name("img" + std::to_string(pod_.spec().containers_size()));
    c->set_image(image);
    return *this;
  }
  PodWrapper& Namespace(const std::string& ns) {
    pod_.mutable_metadata()->set_namespace_(ns);
    return *this;
  }
  PodWrapper& Label(const std::string& key, const std::string& value) {
    (*pod_.mutable_metadata()->mutable_labels())[key] = value;
    return *this;
  }
  // One pod (anti-)affinity term selecting pods with `labels` (match_labels; none: a term
  // without a label selector) over `key`; weight 0 is a required term, others preferred.
  PodWrapper& PodAffinity(bool anti, int32_t weight, const std::string& key,
                          const std::map<std::string, std::string>& labels,
                          const std::vector<std::string>& namespaces = {},
                          const api::LabelSelector* namespace_selector = nullptr) {
    auto* a = anti ? pod_.mutable_spec()->mutable_affinity()->mutable_pod_anti_affinity()
                   : pod_.mutable_spec()->mutable_affinity()->mutable_pod_affinity();
    api::PodAffinityTerm* term;
    if (weight == 0) {
      term = a->add_required_during_scheduling_ignored_during_execution();
    } else {
      auto* w = a->add_preferred_during_scheduling_ignored_during_execution();
      w->set_weight(weight);
      term = w->mutable_pod_affinity_term();
    }
    term->set_topology_key(key);
    for (const auto& [k, v] : labels) {
      (*term->mutable_label_selector()->mutable_match_labels())[k] = v;
    }
    for (const auto& ns : namespaces) term->add_namespaces(ns);
    if (namespace_selector) *term->mutable_namespace_selector() = *namespace_selector;
    return *this;
  }
  // A topology spread constraint over `key` selecting pods with `labels`.
  PodWrapper& Spread(int32_t max_skew, const std::string& key, const std::string& when,
                     const std::map<std::string, std::string>& labels, int32_t min_domains = 0,
                     const std::string& taints_policy = "") {
    auto* c = pod_.mutable_spec()->add_topology_spread_constraints();
    c->set_max_skew(max_skew);
    c->set_topology_key(key);
    c->set_when_unsatisfiable(when);
    for (const auto& [k, v] : labels) (*c->mutable_label_selector()->mutable_match_labels())[k] = v;
    if (min_domains > 0) c->set_min_domains(min_domains);
    c->set_node_taints_policy(taints_policy);
    return *this;
  }
  PodWrapper& Volume(const api::Volume& volume) {
    *pod_.mutable_spec()->add_volumes() = volume;
    return *this;
  }
  PodWrapper& Terminating() {
    pod_.mutable_metadata()->set_deletion_timestamp("2026-01-01T00:00:00Z");
    return *this;
  }
  const api::Pod& Obj() const { return pod_; }
  std::shared_ptr<const api::Pod> Ptr() const { return std::make_shared<const api::Pod>(pod_); }

 private:
  api::Pod pod_;
};
inline PodWrapper MakePod(const std::string& name = "p") { return PodWrapper(name); }

class NodeWrapper {
 public:
  explicit NodeWrapper(const std::string& name) { node_.mutable_metadata()->set_name(name); }
  NodeWrapper& Taint(const std::string& key, const std::string& value, const std::string& effect) {
    auto* t = node_.mutable_spec()->add_taints();
    t->set_key(key);
    t->set_value(value);
    t->set_effect(effect);
    return *this;
  }
  NodeWrapper& Label(const std::string& key, const std::string& value) {
    (*node_.mutable_metadata()->mutable_labels())[key] = value;
    return *this;
  }
  NodeWrapper& Allocatable(const std::map<std::string, std::string>& amounts) {
    for (const auto& [k, v] : amounts) (*node_.mutable_status()->mutable_allocatable())[k] = v;
    return *this;
  }
  NodeWrapper& Image(const std::string& name, int64_t size_bytes) {
    auto* image = node_.mutable_status()->add_images();
    image->add_names(name);
    image->set_size_bytes(size_bytes);
    return *this;
  }
  // A pod already on the node.
  NodeWrapper& Pod(const api::Pod& pod) {
    pods_.push_back(pod);
    return *this;
  }
  NodeWrapper& Unschedulable() {
    node_.mutable_spec()->set_unschedulable(true);
    return *this;
  }
  framework::NodeInfoPtr Ptr() const { return std::make_shared<framework::NodeInfo>(Info()); }
  framework::NodeInfo Info() const {
    framework::NodeInfo info(std::make_shared<const api::Node>(node_));
    for (const auto& p : pods_) info.AddPod(std::make_shared<const api::Pod>(p));
    return info;
  }

 private:
  api::Node node_;
  std::vector<api::Pod> pods_;
};
inline NodeWrapper MakeNode(const std::string& name) { return NodeWrapper(name); }

}  // namespace mkube::scheduler::testing
