#pragma once

#include <memory>
#include <string>

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
  const api::Pod& Obj() const { return pod_; }

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
  NodeWrapper& Unschedulable() {
    node_.mutable_spec()->set_unschedulable(true);
    return *this;
  }
  framework::NodeInfo Info() const {
    return framework::NodeInfo{std::make_shared<const api::Node>(node_), {}};
  }

 private:
  api::Node node_;
};
inline NodeWrapper MakeNode(const std::string& name) { return NodeWrapper(name); }

}  // namespace mkube::scheduler::testing
