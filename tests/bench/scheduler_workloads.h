#pragma once

#include <string>
#include <vector>

#include "proto/api/core.pb.h"

// The pods of scheduler_bench's workloads, shaped after kube-scheduler's scheduler_perf
// cases, in namespace "bench". Pod i belongs to group i / 100 (the affinity workloads relate
// pods of one group), and every pod asks for 100m cpu and 128Mi.
namespace mkube::bench {

inline std::vector<std::string> WorkloadNames() {
  return {"plain", "node-affinity", "anti-affinity", "pod-affinity", "spread"};
}

inline constexpr char kZoneKey[] = "topology.kubernetes.io/zone";

inline api::Pod WorkloadPod(const std::string& workload, int i) {
  api::Pod pod;
  pod.mutable_metadata()->set_name("bench-" + std::to_string(i));
  pod.mutable_metadata()->set_namespace_("bench");
  const std::string group = "g" + std::to_string(i / 100);
  (*pod.mutable_metadata()->mutable_labels())["group"] = group;
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image("web:v1");
  (*c->mutable_resources()->mutable_requests())["cpu"] = "100m";
  (*c->mutable_resources()->mutable_requests())["memory"] = "128Mi";
  auto same_group = [&](api::LabelSelector* s) { (*s->mutable_match_labels())["group"] = group; };
  auto* affinity = pod.mutable_spec()->mutable_affinity();
  if (workload == "node-affinity") {
    // Half the zones (of 10).
    auto* e = affinity->mutable_node_affinity()
                  ->mutable_required_during_scheduling_ignored_during_execution()
                  ->add_node_selector_terms()
                  ->add_match_expressions();
    e->set_key(kZoneKey);
    e->set_operator_("In");
    for (int z = 0; z < 5; ++z) e->add_values("zone-" + std::to_string(z));
  } else if (workload == "anti-affinity") {
    // At most one pod of a group per node.
    auto* t = affinity->mutable_pod_anti_affinity()
                  ->add_required_during_scheduling_ignored_during_execution();
    t->set_topology_key("kubernetes.io/hostname");
    same_group(t->mutable_label_selector());
  } else if (workload == "pod-affinity") {
    // Rather in the zone of the group's other pods.
    auto* w = affinity->mutable_pod_affinity()
                  ->add_preferred_during_scheduling_ignored_during_execution();
    w->set_weight(100);
    w->mutable_pod_affinity_term()->set_topology_key(kZoneKey);
    same_group(w->mutable_pod_affinity_term()->mutable_label_selector());
  } else if (workload == "spread") {
    // A group evenly over the zones.
    auto* s = pod.mutable_spec()->add_topology_spread_constraints();
    s->set_max_skew(1);
    s->set_topology_key(kZoneKey);
    s->set_when_unsatisfiable("DoNotSchedule");
    same_group(s->mutable_label_selector());
  }
  return pod;
}

}  // namespace mkube::bench
