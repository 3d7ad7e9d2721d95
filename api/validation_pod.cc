// The pod spec's validation: containers, probes, resources, volumes, affinity, spreading and
// tolerations, in Kubernetes' words.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "api/labels.h"
#include "api/quantity.h"
#include "api/validation_internal.h"
#include "proto/api/core.pb.h"

namespace mkube::api::validation {
namespace {

void ValidateQuantities(const google::protobuf::Map<std::string, std::string>& m,
                        const std::string& path, FieldErrors* errs) {
  std::map<std::string, std::string> sorted(m.begin(), m.end());
  for (const auto& [name, value] : sorted) {
    const std::string p = fmt::format("{}[{}]", path, name);
    auto q = Quantity::Parse(value);
    if (!q.ok()) {
      errs->Invalid(p, value, kQuantityFormat);
    } else if (q->milli() < 0) {
      errs->Invalid(p, value, "must be greater than or equal to 0");
    }
  }
}

void ValidateProbe(const Probe& probe, const std::string& path, FieldErrors* errs) {
  const int handlers = probe.has_exec() + probe.has_http_get() + probe.has_tcp_socket();
  if (handlers == 0) errs->Required(path + ": must specify a handler type");
  if (handlers > 1) errs->Forbidden(path, "may not specify more than 1 handler type");
  if (probe.has_exec() && probe.exec().command().empty()) errs->Required(path + ".exec.command");
  auto port = [&](const IntOrString& p, const std::string& pp) {
    if (p.has_int_value() && (p.int_value() < 1 || p.int_value() > 65535)) {
      errs->Invalid(pp, std::to_string(p.int_value()), "must be between 1 and 65535, inclusive");
    } else if (!p.has_int_value() && p.string_value().empty()) {
      errs->Required(pp);
    }
  };
  if (probe.has_http_get()) port(probe.http_get().port(), path + ".httpGet.port");
  if (probe.has_tcp_socket()) port(probe.tcp_socket().port(), path + ".tcpSocket.port");
}

void ValidateId(bool set, int64_t id, const std::string& path, FieldErrors* errs) {
  if (set && (id < 0 || id > 2147483647)) {
    errs->Invalid(path, std::to_string(id), "must be between 0 and 2147483647, inclusive");
  }
}

void ValidateContainer(const Container& c, const std::string& path,
                       const std::set<std::string>& volumes, FieldErrors* errs) {
  if (c.name().empty()) {
    errs->Required(path + ".name");
  } else {
    for (const auto& why : Dns1123LabelErrors(c.name())) errs->Invalid(path + ".name", c.name(), why);
  }
  if (c.image().empty()) errs->Required(path + ".image");
  for (size_t i = 0; i < static_cast<size_t>(c.ports_size()); ++i) {
    const auto& p = c.ports(static_cast<int>(i));
    const std::string pp = At(path + ".ports", i);
    if (p.container_port() < 1 || p.container_port() > 65535) {
      errs->Invalid(pp + ".containerPort", std::to_string(p.container_port()),
                    "must be between 1 and 65535, inclusive");
    }
    if (p.host_port() < 0 || p.host_port() > 65535) {
      errs->Invalid(pp + ".hostPort", std::to_string(p.host_port()),
                    "must be between 1 and 65535, inclusive");
    }
    if (!p.protocol().empty() && p.protocol() != "TCP" && p.protocol() != "UDP" &&
        p.protocol() != "SCTP") {
      errs->Unsupported(pp + ".protocol", p.protocol(), {"SCTP", "TCP", "UDP"});
    }
  }
  for (size_t i = 0; i < static_cast<size_t>(c.env_size()); ++i) {
    if (c.env(static_cast<int>(i)).name().empty()) errs->Required(At(path + ".env", i) + ".name");
  }
  ValidateQuantities(c.resources().requests(), path + ".resources.requests", errs);
  ValidateQuantities(c.resources().limits(), path + ".resources.limits", errs);
  for (const auto& [name, req] : c.resources().requests()) {
    auto lim_it = c.resources().limits().find(name);
    if (lim_it == c.resources().limits().end()) continue;
    auto rq = Quantity::Parse(req);
    auto lq = Quantity::Parse(lim_it->second);
    if (rq.ok() && lq.ok() && *rq > *lq) {
      errs->Invalid(fmt::format("{}.resources.requests", path), req,
                    fmt::format("must be less than or equal to {} limit of {}", name,
                                lim_it->second));
    }
  }
  for (size_t i = 0; i < static_cast<size_t>(c.volume_mounts_size()); ++i) {
    const auto& m = c.volume_mounts(static_cast<int>(i));
    const std::string mp = At(path + ".volumeMounts", i);
    if (m.name().empty()) {
      errs->Required(mp + ".name");
    } else if (!volumes.contains(m.name())) {
      errs->Invalid(mp + ".name", m.name(), "volume not found");
    }
    if (m.mount_path().empty()) errs->Required(mp + ".mountPath");
  }
  if (c.has_security_context()) {
    const SecurityContext& sc = c.security_context();
    ValidateId(sc.has_run_as_user(), sc.run_as_user(), path + ".securityContext.runAsUser", errs);
    ValidateId(sc.has_run_as_group(), sc.run_as_group(), path + ".securityContext.runAsGroup",
               errs);
    if (sc.has_allow_privilege_escalation() && !sc.allow_privilege_escalation() &&
        sc.privileged()) {
      errs->Invalid(path + ".securityContext", "",
                    "cannot set `allowPrivilegeEscalation` to false and `privileged` to true");
    }
  }
  if (c.has_liveness_probe()) ValidateProbe(c.liveness_probe(), path + ".livenessProbe", errs);
  if (c.has_readiness_probe()) ValidateProbe(c.readiness_probe(), path + ".readinessProbe", errs);
  if (c.has_startup_probe()) ValidateProbe(c.startup_probe(), path + ".startupProbe", errs);
}

void ValidateNodeSelectorTerm(const NodeSelectorTerm& term, const std::string& path,
                              FieldErrors* errs) {
  if (auto s = Selector::FromNodeSelectorTerm(term); !s.ok()) {
    errs->Invalid(path + ".matchExpressions", "", Msg(s.status()));
  }
}

void ValidatePodAffinityTerm(const PodAffinityTerm& term, const std::string& path,
                             FieldErrors* errs) {
  if (term.topology_key().empty()) {
    errs->Required(path + ".topologyKey");
  } else if (auto st = ValidateLabelKey(term.topology_key()); !st.ok()) {
    errs->Invalid(path + ".topologyKey", term.topology_key(), Msg(st));
  }
  if (auto s = Selector::FromLabelSelector(term.label_selector()); !s.ok()) {
    errs->Invalid(path + ".labelSelector", "", Msg(s.status()));
  }
  if (auto s = Selector::FromLabelSelector(term.namespace_selector()); !s.ok()) {
    errs->Invalid(path + ".namespaceSelector", "", Msg(s.status()));
  }
}

void ValidateSpreadConstraints(const google::protobuf::RepeatedPtrField<TopologySpreadConstraint>& list,
                               const std::string& path, FieldErrors* errs) {
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < static_cast<size_t>(list.size()); ++i) {
    const auto& c = list[static_cast<int>(i)];
    const std::string cp = At(path, i);
    if (c.max_skew() <= 0) {
      errs->Invalid(cp + ".maxSkew", std::to_string(c.max_skew()), "must be greater than zero");
    }
    if (c.topology_key().empty()) {
      errs->Required(cp + ".topologyKey");
    } else if (auto st = ValidateLabelKey(c.topology_key()); !st.ok()) {
      errs->Invalid(cp + ".topologyKey", c.topology_key(), Msg(st));
    }
    if (c.when_unsatisfiable() != "DoNotSchedule" && c.when_unsatisfiable() != "ScheduleAnyway") {
      errs->Unsupported(cp + ".whenUnsatisfiable", c.when_unsatisfiable(),
                        {"DoNotSchedule", "ScheduleAnyway"});
    } else if (!seen.emplace(c.topology_key(), c.when_unsatisfiable()).second) {
      errs->Duplicate(cp, fmt::format("{{\"{}\", \"{}\"}}", c.topology_key(),
                                      c.when_unsatisfiable()));
    }
    if (c.has_min_domains()) {
      if (c.min_domains() <= 0) {
        errs->Invalid(cp + ".minDomains", std::to_string(c.min_domains()),
                      "must be greater than zero");
      } else if (c.when_unsatisfiable() != "DoNotSchedule") {
        errs->Invalid(cp + ".minDomains", std::to_string(c.min_domains()),
                      fmt::format("can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
                                  "not {}",
                                  c.when_unsatisfiable()));
      }
    }
    for (const auto& [field, value] : {std::pair{"nodeAffinityPolicy", &c.node_affinity_policy()},
                                       std::pair{"nodeTaintsPolicy", &c.node_taints_policy()}}) {
      if (!value->empty() && *value != "Honor" && *value != "Ignore") {
        errs->Unsupported(cp + "." + field, *value, {"Honor", "Ignore"});
      }
    }
    auto selector = Selector::FromLabelSelector(c.label_selector());
    if (!selector.ok()) errs->Invalid(cp + ".labelSelector", "", Msg(selector.status()));
    for (size_t k = 0; k < static_cast<size_t>(c.match_label_keys_size()); ++k) {
      const std::string& key = c.match_label_keys(static_cast<int>(k));
      const std::string kp = At(cp + ".matchLabelKeys", k);
      if (auto st = ValidateLabelKey(key); !st.ok()) {
        errs->Invalid(kp, key, Msg(st));
      } else if (selector.ok() && std::any_of(selector->requirements().begin(),
                                              selector->requirements().end(),
                                              [&](const auto& r) { return r.key == key; })) {
        errs->Invalid(kp, key, "exists in both matchLabelKeys and labelSelector");
      }
    }
  }
}

// Exactly one source per volume (none is an emptyDir), with what the source needs.
void ValidateVolumeSource(const Volume& v, const std::string& path, FieldErrors* errs) {
  const int sources = v.has_empty_dir() + v.has_host_path() + v.has_gce_persistent_disk() +
                      v.has_aws_elastic_block_store() + v.has_rbd() + v.has_iscsi();
  if (sources > 1) errs->Forbidden(path, "may not specify more than 1 volume type");
  if (v.has_host_path() && v.host_path().path().empty()) errs->Required(path + ".hostPath.path");
  if (v.has_gce_persistent_disk() && v.gce_persistent_disk().pd_name().empty()) {
    errs->Required(path + ".gcePersistentDisk.pdName");
  }
  if (v.has_aws_elastic_block_store() && v.aws_elastic_block_store().volume_id().empty()) {
    errs->Required(path + ".awsElasticBlockStore.volumeID");
  }
  if (v.has_rbd()) {
    if (v.rbd().monitors().empty()) errs->Required(path + ".rbd.monitors");
    if (v.rbd().image().empty()) errs->Required(path + ".rbd.image");
  }
  if (v.has_iscsi()) {
    if (v.iscsi().target_portal().empty()) errs->Required(path + ".iscsi.targetPortal");
    if (v.iscsi().iqn().empty()) errs->Required(path + ".iscsi.iqn");
  }
}

void ValidateWeight(int32_t w, const std::string& path, FieldErrors* errs) {
  if (w < 1 || w > 100) errs->Invalid(path, std::to_string(w), "must be in the range 1-100");
}

void ValidatePodAffinity(const PodAffinity& a, const std::string& path, FieldErrors* errs) {
  const std::string req = path + ".requiredDuringSchedulingIgnoredDuringExecution";
  for (size_t i = 0; i < static_cast<size_t>(a.required_during_scheduling_ignored_during_execution_size()); ++i) {
    ValidatePodAffinityTerm(a.required_during_scheduling_ignored_during_execution(static_cast<int>(i)), At(req, i), errs);
  }
  const std::string pref = path + ".preferredDuringSchedulingIgnoredDuringExecution";
  for (size_t i = 0; i < static_cast<size_t>(a.preferred_during_scheduling_ignored_during_execution_size()); ++i) {
    const auto& w = a.preferred_during_scheduling_ignored_during_execution(static_cast<int>(i));
    ValidateWeight(w.weight(), At(pref, i) + ".weight", errs);
    ValidatePodAffinityTerm(w.pod_affinity_term(), At(pref, i) + ".podAffinityTerm", errs);
  }
}

void ValidateToleration(const Toleration& t, const std::string& path, FieldErrors* errs) {
  if (!t.key().empty()) {
    if (auto st = ValidateLabelKey(t.key()); !st.ok()) errs->Invalid(path + ".key", t.key(), Msg(st));
  }
  if (t.operator_() == "Exists") {
    if (!t.value().empty()) {
      errs->Invalid(path + ".operator", t.value(),
                    "value must be empty when `operator` is 'Exists'");
    }
  } else if (t.operator_().empty() || t.operator_() == "Equal") {
    if (t.key().empty()) {
      errs->Invalid(path + ".operator", t.operator_(),
                    "operator must be Exists when `key` is empty, which means \"match all "
                    "values and all keys\"");
    }
  } else {
    errs->Unsupported(path + ".operator", t.operator_(), {"Equal", "Exists"});
  }
  if (!t.effect().empty() &&
      std::find(TaintEffects().begin(), TaintEffects().end(), t.effect()) == TaintEffects().end()) {
    errs->Unsupported(path + ".effect", t.effect(), TaintEffects());
  }
  if (t.has_toleration_seconds() && t.effect() != "NoExecute") {
    errs->Invalid(path + ".effect", t.effect(),
                  "effect must be 'NoExecute' when `tolerationSeconds` is set");
  }
}

// The pod's volumes: named, each name once, with a valid source. Returns their names.
std::set<std::string> ValidateVolumes(const PodSpec& spec, const std::string& path,
                                      FieldErrors* errs) {
  std::set<std::string> volumes;
  for (size_t i = 0; i < static_cast<size_t>(spec.volumes_size()); ++i) {
    const auto& v = spec.volumes(static_cast<int>(i));
    const std::string vp = At(path + ".volumes", i);
    if (v.name().empty()) {
      errs->Required(vp + ".name");
    } else if (!volumes.insert(v.name()).second) {
      errs->Duplicate(vp + ".name", v.name());
    }
    ValidateVolumeSource(v, vp, errs);
  }
  return volumes;
}

// Init containers and containers: at least one container, each valid, no name twice.
void ValidateContainers(const PodSpec& spec, const std::string& path,
                        const std::set<std::string>& volumes, FieldErrors* errs) {
  if (spec.containers().empty()) errs->Required(path + ".containers");
  std::set<std::string> names;
  auto containers = [&](const google::protobuf::RepeatedPtrField<Container>& list,
                        const std::string& cp) {
    for (size_t i = 0; i < static_cast<size_t>(list.size()); ++i) {
      const auto& c = list[static_cast<int>(i)];
      ValidateContainer(c, At(cp, i), volumes, errs);
      if (!c.name().empty() && !names.insert(c.name()).second) {
        errs->Duplicate(At(cp, i) + ".name", c.name());
      }
    }
  };
  containers(spec.init_containers(), path + ".initContainers");
  containers(spec.containers(), path + ".containers");
}

void ValidatePodSecurityContext(const PodSecurityContext& sc, const std::string& sp,
                                FieldErrors* errs) {
  ValidateId(sc.has_run_as_user(), sc.run_as_user(), sp + ".runAsUser", errs);
  ValidateId(sc.has_run_as_group(), sc.run_as_group(), sp + ".runAsGroup", errs);
  ValidateId(sc.has_fs_group(), sc.fs_group(), sp + ".fsGroup", errs);
  for (size_t i = 0; i < static_cast<size_t>(sc.supplemental_groups_size()); ++i) {
    ValidateId(true, sc.supplemental_groups(static_cast<int>(i)), At(sp + ".supplementalGroups", i),
               errs);
  }
}

void ValidateNodeAffinity(const NodeAffinity& na, const std::string& np, FieldErrors* errs) {
  if (na.has_required_during_scheduling_ignored_during_execution()) {
    const auto& ns = na.required_during_scheduling_ignored_during_execution();
    const std::string rp = np + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    if (ns.node_selector_terms().empty()) {
      errs->Required(rp + ": must have at least one node selector term");
    }
    for (size_t i = 0; i < static_cast<size_t>(ns.node_selector_terms_size()); ++i) {
      ValidateNodeSelectorTerm(ns.node_selector_terms(static_cast<int>(i)), At(rp, i), errs);
    }
  }
  const std::string pp = np + ".preferredDuringSchedulingIgnoredDuringExecution";
  for (size_t i = 0;
       i < static_cast<size_t>(na.preferred_during_scheduling_ignored_during_execution_size());
       ++i) {
    const auto& term = na.preferred_during_scheduling_ignored_during_execution(static_cast<int>(i));
    ValidateWeight(term.weight(), At(pp, i) + ".weight", errs);
    ValidateNodeSelectorTerm(term.preference(), At(pp, i) + ".preference", errs);
  }
}

void ValidateAffinity(const Affinity& a, const std::string& ap, FieldErrors* errs) {
  if (a.has_node_affinity()) ValidateNodeAffinity(a.node_affinity(), ap + ".nodeAffinity", errs);
  if (a.has_pod_affinity()) ValidatePodAffinity(a.pod_affinity(), ap + ".podAffinity", errs);
  if (a.has_pod_anti_affinity()) {
    ValidatePodAffinity(a.pod_anti_affinity(), ap + ".podAntiAffinity", errs);
  }
}

}  // namespace

void ValidatePodSpec(const PodSpec& spec, const std::string& path, FieldErrors* errs) {
  const std::set<std::string> volumes = ValidateVolumes(spec, path, errs);
  ValidateContainers(spec, path, volumes, errs);
  if (spec.has_security_context()) {
    ValidatePodSecurityContext(spec.security_context(), path + ".securityContext", errs);
  }
  if (!spec.restart_policy().empty() && spec.restart_policy() != "Always" &&
      spec.restart_policy() != "OnFailure" && spec.restart_policy() != "Never") {
    errs->Unsupported(path + ".restartPolicy", spec.restart_policy(),
                      {"Always", "OnFailure", "Never"});
  }
  if (spec.has_termination_grace_period_seconds() && spec.termination_grace_period_seconds() < 0) {
    errs->Invalid(path + ".terminationGracePeriodSeconds",
                  std::to_string(spec.termination_grace_period_seconds()),
                  "must be greater than or equal to 0");
  }
  if (!spec.node_name().empty()) {
    for (const auto& why : Dns1123SubdomainErrors(spec.node_name())) {
      errs->Invalid(path + ".nodeName", spec.node_name(), why);
    }
  }
  ValidateLabels(spec.node_selector(), path + ".nodeSelector", errs);
  ValidateQuantities(spec.overhead(), path + ".overhead", errs);
  for (size_t i = 0; i < static_cast<size_t>(spec.tolerations_size()); ++i) {
    ValidateToleration(spec.tolerations(static_cast<int>(i)), At(path + ".tolerations", i), errs);
  }
  ValidateSpreadConstraints(spec.topology_spread_constraints(),
                            path + ".topologySpreadConstraints", errs);
  if (spec.has_affinity()) ValidateAffinity(spec.affinity(), path + ".affinity", errs);
}

}  // namespace mkube::api::validation
