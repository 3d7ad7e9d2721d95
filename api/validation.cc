#include "api/validation.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/cron.h"
#include "api/labels.h"
#include "api/validation_internal.h"
#include "api/quantity.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/batch.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::api {
namespace {

using validation::At;
using validation::Msg;
using validation::Quote;
using validation::ValidateLabels;
using validation::ValidatePodSpec;

}  // namespace

namespace validation {

void ValidateLabels(const google::protobuf::Map<std::string, std::string>& labels,
                    const std::string& path, FieldErrors* errs) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  for (const auto& [k, v] : sorted) {
    for (const auto& why : QualifiedNameErrors(k)) errs->Invalid(path, k, why);
    for (const auto& why : LabelValueErrors(v)) errs->Invalid(path, v, why);
  }
}

}  // namespace validation

namespace {

void ValidateMeta(const ObjectMeta& meta, const KindInfo& kind, FieldErrors* errs) {
  // Namespaces' names are DNS labels; those of every other kind served here are subdomains.
  const auto name_errors = [&kind](std::string_view name) {
    return kind.kind == "Namespace" ? Dns1123LabelErrors(name) : Dns1123SubdomainErrors(name);
  };
  if (!meta.generate_name().empty()) {
    for (const auto& why : name_errors(MaskTrailingDash(meta.generate_name()))) {
      errs->Invalid("metadata.generateName", meta.generate_name(), why);
    }
  }
  if (meta.name().empty()) {
    errs->Required("metadata.name: name or generateName is required");
  } else {
    for (const auto& why : name_errors(meta.name())) errs->Invalid("metadata.name", meta.name(), why);
  }
  if (!meta.namespace_().empty()) {
    if (!kind.namespaced) {
      errs->Forbidden("metadata.namespace", "not allowed on this type");
    } else {
      for (const auto& why : Dns1123LabelErrors(meta.namespace_())) {
        errs->Invalid("metadata.namespace", meta.namespace_(), why);
      }
    }
  }
  ValidateLabels(meta.labels(), "metadata.labels", errs);
  std::map<std::string, std::string> annotations(meta.annotations().begin(),
                                                 meta.annotations().end());
  size_t total = 0;
  for (const auto& [k, v] : annotations) {
    // Keys are qualified names in any case.
    std::string lower = k;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& why : QualifiedNameErrors(lower)) errs->Invalid("metadata.annotations", k, why);
    total += k.size() + v.size();
  }
  if (total > kTotalAnnotationSizeLimit) errs->TooLong("metadata.annotations", kTotalAnnotationSizeLimit);
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

void NotNegative(bool set, int64_t value, const std::string& path, FieldErrors* errs) {
  if (set && value < 0) {
    errs->Invalid(path, std::to_string(value), "must be greater than or equal to 0");
  }
}

void ValidateJobSpec(const JobSpec& spec, const std::string& path, FieldErrors* errs) {
  ValidatePodSpec(spec.template_().spec(), path + ".template.spec", errs);
  const std::string& rp = spec.template_().spec().restart_policy();
  if (rp != "OnFailure" && rp != "Never") {
    errs->Unsupported(path + ".template.spec.restartPolicy", rp, {"OnFailure", "Never"});
  }
  NotNegative(spec.has_parallelism(), spec.parallelism(), path + ".parallelism", errs);
  NotNegative(spec.has_completions(), spec.completions(), path + ".completions", errs);
  NotNegative(spec.has_backoff_limit(), spec.backoff_limit(), path + ".backoffLimit", errs);
  if (spec.has_active_deadline_seconds() && spec.active_deadline_seconds() <= 0) {
    errs->Invalid(path + ".activeDeadlineSeconds", std::to_string(spec.active_deadline_seconds()),
                  "must be greater than 0");
  }
}

void ValidateCronJob(const CronJob& cj, FieldErrors* errs) {
  // Its Jobs are named after it with 11 more characters.
  if (cj.metadata().name().size() > 52) {
    errs->Invalid("metadata.name", cj.metadata().name(), "must be no more than 52 characters");
  }
  const auto& spec = cj.spec();
  if (spec.schedule().empty()) {
    errs->Required("spec.schedule");
  } else {
    if (auto s = CronSchedule::Parse(spec.schedule()); !s.ok()) {
      errs->Invalid("spec.schedule", spec.schedule(), Msg(s.status()));
    }
    if (spec.schedule().find("TZ") != std::string::npos) {
      errs->Invalid("spec.schedule", spec.schedule(),
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
    }
  }
  if (spec.has_time_zone()) {
    if (auto z = LoadCronTimeZone(spec.time_zone()); !z.ok()) {
      errs->Invalid("spec.timeZone", spec.time_zone(), Msg(z.status()));
    }
  }
  const std::string& policy = spec.concurrency_policy();
  if (policy != "Allow" && policy != "Forbid" && policy != "Replace") {
    errs->Unsupported("spec.concurrencyPolicy", policy, {"Allow", "Forbid", "Replace"});
  }
  NotNegative(spec.has_starting_deadline_seconds(), spec.starting_deadline_seconds(),
              "spec.startingDeadlineSeconds", errs);
  NotNegative(spec.has_successful_jobs_history_limit(), spec.successful_jobs_history_limit(),
              "spec.successfulJobsHistoryLimit", errs);
  NotNegative(spec.has_failed_jobs_history_limit(), spec.failed_jobs_history_limit(),
              "spec.failedJobsHistoryLimit", errs);
  ValidateLabels(spec.job_template().metadata().labels(), "spec.jobTemplate.metadata.labels",
                 errs);
  ValidateJobSpec(spec.job_template().spec(), "spec.jobTemplate.spec", errs);
}

// A node's taints: each with a qualified key, a label value and a known effect; no key and
// effect twice.
void ValidateNodeSpec(const NodeSpec& spec, FieldErrors* errs) {
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < static_cast<size_t>(spec.taints_size()); ++i) {
    const auto& t = spec.taints(static_cast<int>(i));
    const std::string tp = At("spec.taints", i);
    if (t.key().empty()) {
      errs->Required(tp + ".key");
    } else {
      for (const auto& why : QualifiedNameErrors(t.key())) errs->Invalid(tp + ".key", t.key(), why);
    }
    if (auto why = LabelValueErrors(t.value()); !why.empty()) {
      errs->Invalid(tp + ".value", t.value(), absl::StrJoin(why, ";"));
    }
    if (t.effect().empty()) {
      errs->Required(tp + ".effect");
    } else if (std::find(validation::TaintEffects().begin(), validation::TaintEffects().end(),
                         t.effect()) == validation::TaintEffects().end()) {
      errs->Unsupported(tp + ".effect", t.effect(), validation::TaintEffects());
    }
    if (!seen.insert({t.key(), t.effect()}).second) {
      errs->Duplicate(tp, fmt::format("{}:{}", t.key(), t.effect()));
    }
  }
}

// Replicas, selector and template, a known strategy, and pods that restart Always.
void ValidateDeploymentSpec(const DeploymentSpec& spec, FieldErrors* errs) {
  ValidateReplicas(spec.has_replicas(), spec.replicas(), "spec.replicas", errs);
  ValidateWorkload(spec.selector(), spec.template_(), "spec", errs);
  if (!spec.strategy().type().empty() && spec.strategy().type() != "RollingUpdate" &&
      spec.strategy().type() != "Recreate") {
    errs->Unsupported("spec.strategy.type", spec.strategy().type(), {"Recreate", "RollingUpdate"});
  }
  if (spec.template_().spec().restart_policy() != "Always") {
    errs->Unsupported("spec.template.spec.restartPolicy", spec.template_().spec().restart_policy(),
                      {"Always"});
  }
}

// minAvailable or maxUnavailable (not both), each a count or a percentage; a valid selector.
void ValidateBudgetSpec(const PodDisruptionBudgetSpec& spec, FieldErrors* errs) {
  if (spec.has_min_available() && spec.has_max_unavailable()) {
    errs->Invalid("spec", "", "minAvailable and maxUnavailable cannot be both set");
  }
  for (const auto& [v, set, path] :
       {std::tuple{&spec.min_available(), spec.has_min_available(), "spec.minAvailable"},
        std::tuple{&spec.max_unavailable(), spec.has_max_unavailable(), "spec.maxUnavailable"}}) {
    if (!set) continue;
    if (v->has_int_value() && v->int_value() < 0) {
      errs->Invalid(path, std::to_string(v->int_value()), "must be greater than or equal to 0");
    }
    if (v->has_string_value()) {
      const std::string& s = v->string_value();
      int pct = -1;
      if (s.empty() || s.back() != '%' || !absl::SimpleAtoi(s.substr(0, s.size() - 1), &pct) ||
          pct < 0 || pct > 100) {
        errs->Invalid(path, s,
                      "a valid percent string must be a numeric string followed by an "
                      "ending '%' between 0 and 100");
      }
    }
  }
  if (auto sel = Selector::FromLabelSelector(spec.selector()); !sel.ok()) {
    errs->Invalid("spec.selector", "", std::string(sel.status().message()));
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

void FieldErrors::TooLong(const std::string& path, size_t max_bytes) {
  errors_.push_back(fmt::format("{}: Too long: may not be more than {} bytes", path, max_bytes));
}

absl::Status FieldErrors::ToStatus(std::string_view kind, std::string_view name) const {
  if (errors_.empty()) return absl::OkStatus();
  const std::string list =
      errors_.size() == 1 ? errors_[0] : absl::StrCat("[", absl::StrJoin(errors_, ", "), "]");
  return absl::InvalidArgumentError(fmt::format("{} {} is invalid: {}", kind, Quote(name), list));
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
    ValidateNodeSpec(static_cast<const Node*>(m)->spec(), &errs);
  } else if (kind == "Deployment") {
    ValidateDeploymentSpec(static_cast<const Deployment*>(m)->spec(), &errs);
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
    ValidateBudgetSpec(static_cast<const PodDisruptionBudget*>(m)->spec(), &errs);
  } else if (kind == "Job") {
    ValidateJobSpec(static_cast<const Job*>(m)->spec(), "spec", &errs);
  } else if (kind == "CronJob") {
    ValidateCronJob(*static_cast<const CronJob*>(m), &errs);
  }
  return errs.ToStatus(kind, meta.name());
}

}  // namespace mkube::api
