#include "api/validation.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/labels.h"
#include "api/quantity.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::api {
namespace {

std::string Quote(std::string_view s) { return fmt::format("\"{}\"", s); }

std::string Msg(const absl::Status& st) { return std::string(st.message()); }

bool LowerAlnum(char c) {
  return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
}

std::string At(const std::string& path, size_t i) { return fmt::format("{}[{}]", path, i); }

const std::vector<std::string> kTaintEffects = {"NoSchedule", "PreferNoSchedule", "NoExecute"};

void ValidateLabels(const google::protobuf::Map<std::string, std::string>& labels,
                    const std::string& path, FieldErrors* errs) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  for (const auto& [k, v] : sorted) {
    if (auto st = ValidateLabelKey(k); !st.ok()) errs->Invalid(path, k, Msg(st));
    if (auto st = ValidateLabelValue(v); !st.ok()) errs->Invalid(fmt::format("{}[{}]", path, k), v, Msg(st));
  }
}

void ValidateMeta(const ObjectMeta& meta, const KindInfo& kind, FieldErrors* errs) {
  if (meta.name().empty()) {
    if (meta.generate_name().empty()) errs->Required("metadata.name");
  } else {
    // Namespaces and nodes' names are labels in DNS; most other names are subdomains.
    const std::string why = kind.kind == "Namespace" ? CheckDns1123Label(meta.name())
                                                     : CheckDns1123Subdomain(meta.name());
    if (!why.empty()) errs->Invalid("metadata.name", meta.name(), why);
  }
  if (!meta.namespace_().empty()) {
    if (!kind.namespaced) {
      errs->Forbidden("metadata.namespace", "not allowed on this type");
    } else if (auto why = CheckDns1123Label(meta.namespace_()); !why.empty()) {
      errs->Invalid("metadata.namespace", meta.namespace_(), why);
    }
  }
  ValidateLabels(meta.labels(), "metadata.labels", errs);
  std::map<std::string, std::string> annotations(meta.annotations().begin(),
                                                 meta.annotations().end());
  for (const auto& [k, v] : annotations) {
    if (auto st = ValidateLabelKey(k); !st.ok()) errs->Invalid("metadata.annotations", k, Msg(st));
  }
}

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

void ValidateContainer(const Container& c, const std::string& path,
                       const std::set<std::string>& volumes, FieldErrors* errs) {
  if (c.name().empty()) {
    errs->Required(path + ".name");
  } else if (auto why = CheckDns1123Label(c.name()); !why.empty()) {
    errs->Invalid(path + ".name", c.name(), why);
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
      std::find(kTaintEffects.begin(), kTaintEffects.end(), t.effect()) == kTaintEffects.end()) {
    errs->Unsupported(path + ".effect", t.effect(), kTaintEffects);
  }
  if (t.has_toleration_seconds() && t.effect() != "NoExecute") {
    errs->Invalid(path + ".effect", t.effect(),
                  "effect must be 'NoExecute' when `tolerationSeconds` is set");
  }
}

void ValidatePodSpec(const PodSpec& spec, const std::string& path, FieldErrors* errs) {
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
    if (auto why = CheckDns1123Subdomain(spec.node_name()); !why.empty()) {
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
  if (spec.has_affinity()) {
    const auto& a = spec.affinity();
    const std::string ap = path + ".affinity";
    if (a.has_node_affinity()) {
      const auto& na = a.node_affinity();
      const std::string np = ap + ".nodeAffinity";
      if (na.has_required_during_scheduling_ignored_during_execution()) {
        const auto& ns = na.required_during_scheduling_ignored_during_execution();
        const std::string rp = np + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
        if (ns.node_selector_terms().empty()) errs->Required(rp + ": must have at least one node selector term");
        for (size_t i = 0; i < static_cast<size_t>(ns.node_selector_terms_size()); ++i) {
          ValidateNodeSelectorTerm(ns.node_selector_terms(static_cast<int>(i)), At(rp, i), errs);
        }
      }
      const std::string pp = np + ".preferredDuringSchedulingIgnoredDuringExecution";
      for (size_t i = 0; i < static_cast<size_t>(na.preferred_during_scheduling_ignored_during_execution_size()); ++i) {
        const auto& term = na.preferred_during_scheduling_ignored_during_execution(static_cast<int>(i));
        ValidateWeight(term.weight(), At(pp, i) + ".weight", errs);
        ValidateNodeSelectorTerm(term.preference(), At(pp, i) + ".preference", errs);
      }
    }
    if (a.has_pod_affinity()) ValidatePodAffinity(a.pod_affinity(), ap + ".podAffinity", errs);
    if (a.has_pod_anti_affinity()) {
      ValidatePodAffinity(a.pod_anti_affinity(), ap + ".podAntiAffinity", errs);
    }
  }
}

// A workload's selector must be set and select its own template.
void ValidateWorkload(const LabelSelector& selector, const PodTemplateSpec& tmpl,
                      const std::string& path, FieldErrors* errs) {
  if (selector.match_labels().empty() && selector.match_expressions().empty()) {
    errs->Required(path + ".selector");
  } else if (auto s = Selector::FromLabelSelector(selector); !s.ok()) {
    errs->Invalid(path + ".selector", "", Msg(s.status()));
  } else if (!s->Matches(tmpl.metadata().labels())) {
    std::vector<std::string> labels;
    for (const auto& [k, v] : tmpl.metadata().labels()) labels.push_back(k + ":" + v);
    std::sort(labels.begin(), labels.end());
    errs->Invalid(path + ".template.metadata.labels",
                  fmt::format("map[{}]", absl::StrJoin(labels, " ")),
                  "`selector` does not match template `labels`");
  }
  ValidateLabels(tmpl.metadata().labels(), path + ".template.metadata.labels", errs);
  ValidatePodSpec(tmpl.spec(), path + ".template.spec", errs);
}

void ValidateReplicas(bool has, int32_t replicas, const std::string& path, FieldErrors* errs) {
  if (has && replicas < 0) {
    errs->Invalid(path, std::to_string(replicas), "must be greater than or equal to 0");
  }
}

}  // namespace

void FieldErrors::Required(const std::string& path) {
  const auto colon = path.find(": ");
  if (colon == std::string::npos) {
    errors_.push_back(path + ": Required value");
  } else {
    errors_.push_back(path.substr(0, colon) + ": Required value: " + path.substr(colon + 2));
  }
}

void FieldErrors::Invalid(const std::string& path, std::string_view value, std::string_view why) {
  errors_.push_back(fmt::format("{}: Invalid value: {}: {}", path, Quote(value), why));
}

void FieldErrors::Unsupported(const std::string& path, std::string_view value,
                              const std::vector<std::string>& supported) {
  std::vector<std::string> quoted;
  for (const auto& s : supported) quoted.push_back(Quote(s));
  errors_.push_back(fmt::format("{}: Unsupported value: {}: supported values: {}", path,
                                Quote(value), absl::StrJoin(quoted, ", ")));
}

void FieldErrors::Duplicate(const std::string& path, std::string_view value) {
  errors_.push_back(fmt::format("{}: Duplicate value: {}", path, Quote(value)));
}

void FieldErrors::Forbidden(const std::string& path, std::string_view why) {
  errors_.push_back(fmt::format("{}: Forbidden: {}", path, why));
}

absl::Status FieldErrors::ToStatus(std::string_view kind, std::string_view name) const {
  if (errors_.empty()) return absl::OkStatus();
  const std::string list =
      errors_.size() == 1 ? errors_[0] : absl::StrCat("[", absl::StrJoin(errors_, ", "), "]");
  return absl::InvalidArgumentError(fmt::format("{} {} is invalid: {}", kind, Quote(name), list));
}

std::string CheckDns1123Label(std::string_view name) {
  const bool ok = !name.empty() && name.size() <= 63 && LowerAlnum(name.front()) &&
                  LowerAlnum(name.back()) &&
                  std::all_of(name.begin(), name.end(),
                              [](char c) { return LowerAlnum(c) || c == '-'; });
  if (ok) return "";
  return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
         "and must start and end with an alphanumeric character (e.g. 'my-name',  or "
         "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
}

std::string CheckDns1123Subdomain(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 253;
  size_t start = 0;
  while (ok) {
    const size_t dot = name.find('.', start);
    std::string_view label = name.substr(start, dot == std::string_view::npos ? name.npos : dot - start);
    ok = !label.empty() && LowerAlnum(label.front()) && LowerAlnum(label.back()) &&
         std::all_of(label.begin(), label.end(), [](char c) { return LowerAlnum(c) || c == '-'; });
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (ok) return "";
  return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
         "'-' or '.', and must start and end with an alphanumeric character (e.g. "
         "'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
}

absl::Status Validate(const Object& obj) {
  FieldErrors errs;
  const auto* m = obj.message.get();
  const auto* meta_field = m->GetDescriptor()->FindFieldByName("metadata");
  const auto& meta = static_cast<const ObjectMeta&>(m->GetReflection()->GetMessage(*m, meta_field));
  ValidateMeta(meta, *obj.info, &errs);
  const std::string& kind = obj.info->kind;
  if (kind == "Pod") {
    ValidatePodSpec(static_cast<const Pod*>(m)->spec(), "spec", &errs);
  } else if (kind == "Node") {
    const auto& spec = static_cast<const Node*>(m)->spec();
    std::set<std::pair<std::string, std::string>> seen;
    for (size_t i = 0; i < static_cast<size_t>(spec.taints_size()); ++i) {
      const auto& t = spec.taints(static_cast<int>(i));
      const std::string tp = At("spec.taints", i);
      if (t.key().empty()) {
        errs.Required(tp + ".key");
      } else if (auto st = ValidateLabelKey(t.key()); !st.ok()) {
        errs.Invalid(tp + ".key", t.key(), Msg(st));
      }
      if (auto st = ValidateLabelValue(t.value()); !st.ok()) {
        errs.Invalid(tp + ".value", t.value(), Msg(st));
      }
      if (t.effect().empty()) {
        errs.Required(tp + ".effect");
      } else if (std::find(kTaintEffects.begin(), kTaintEffects.end(), t.effect()) ==
                 kTaintEffects.end()) {
        errs.Unsupported(tp + ".effect", t.effect(), kTaintEffects);
      }
      if (!seen.insert({t.key(), t.effect()}).second) {
        errs.Duplicate(tp, fmt::format("{}:{}", t.key(), t.effect()));
      }
    }
  } else if (kind == "Deployment") {
    const auto& spec = static_cast<const Deployment*>(m)->spec();
    ValidateReplicas(spec.has_replicas(), spec.replicas(), "spec.replicas", &errs);
    ValidateWorkload(spec.selector(), spec.template_(), "spec", &errs);
    if (!spec.strategy().type().empty() && spec.strategy().type() != "RollingUpdate" &&
        spec.strategy().type() != "Recreate") {
      errs.Unsupported("spec.strategy.type", spec.strategy().type(), {"Recreate", "RollingUpdate"});
    }
    if (spec.template_().spec().restart_policy() != "Always") {
      errs.Unsupported("spec.template.spec.restartPolicy", spec.template_().spec().restart_policy(),
                       {"Always"});
    }
  } else if (kind == "ReplicaSet") {
    const auto& spec = static_cast<const ReplicaSet*>(m)->spec();
    ValidateReplicas(spec.has_replicas(), spec.replicas(), "spec.replicas", &errs);
    ValidateWorkload(spec.selector(), spec.template_(), "spec", &errs);
  } else if (kind == "ReplicationController") {
    const auto& spec = static_cast<const ReplicationController*>(m)->spec();
    ValidateReplicas(spec.has_replicas(), spec.replicas(), "spec.replicas", &errs);
    LabelSelector sel;
    *sel.mutable_match_labels() = spec.selector();
    ValidateWorkload(sel, spec.template_(), "spec", &errs);
  } else if (kind == "DaemonSet") {
    const auto& spec = static_cast<const DaemonSet*>(m)->spec();
    ValidateWorkload(spec.selector(), spec.template_(), "spec", &errs);
  } else if (kind == "PodDisruptionBudget") {
    const auto& spec = static_cast<const PodDisruptionBudget*>(m)->spec();
    if (spec.has_min_available() && spec.has_max_unavailable()) {
      errs.Invalid("spec", "", "minAvailable and maxUnavailable cannot be both set");
    }
    for (const auto& [v, set, path] :
         {std::tuple{&spec.min_available(), spec.has_min_available(), "spec.minAvailable"},
          std::tuple{&spec.max_unavailable(), spec.has_max_unavailable(), "spec.maxUnavailable"}}) {
      if (!set) continue;
      if (v->has_int_value() && v->int_value() < 0) {
        errs.Invalid(path, std::to_string(v->int_value()), "must be greater than or equal to 0");
      }
      if (v->has_string_value()) {
        const std::string& s = v->string_value();
        int pct = -1;
        if (s.empty() || s.back() != '%' || !absl::SimpleAtoi(s.substr(0, s.size() - 1), &pct) ||
            pct < 0 || pct > 100) {
          errs.Invalid(path, s, "a valid percent string must be a numeric string followed by an "
                                "ending '%' between 0 and 100");
        }
      }
    }
    if (auto sel = Selector::FromLabelSelector(spec.selector()); !sel.ok()) {
      errs.Invalid("spec.selector", "", std::string(sel.status().message()));
    }
  } else if (kind == "Job") {
    const auto& spec = static_cast<const Job*>(m)->spec();
    ValidatePodSpec(spec.template_().spec(), "spec.template.spec", &errs);
    const std::string& rp = spec.template_().spec().restart_policy();
    if (rp != "OnFailure" && rp != "Never") {
      errs.Unsupported("spec.template.spec.restartPolicy", rp, {"OnFailure", "Never"});
    }
    if (spec.has_parallelism() && spec.parallelism() < 0) {
      errs.Invalid("spec.parallelism", std::to_string(spec.parallelism()),
                   "must be greater than or equal to 0");
    }
  }
  return errs.ToStatus(kind, meta.name());
}

}  // namespace mkube::api
