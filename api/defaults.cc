#include "api/defaults.h"

#include "proto/api/apps.pb.h"
#include "proto/api/batch.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::api {
namespace {

constexpr int64_t kDefaultGracePeriod = 30;

void DefaultProbe(Probe* p) {
  if (p->timeout_seconds() == 0) p->set_timeout_seconds(1);
  if (p->period_seconds() == 0) p->set_period_seconds(10);
  if (p->success_threshold() == 0) p->set_success_threshold(1);
  if (p->failure_threshold() == 0) p->set_failure_threshold(3);
}

void DefaultContainer(Container* c) {
  if (c->image_pull_policy().empty()) {
    // A missing or ":latest" tag is pulled every time, a pinned one only when missing.
    const std::string& image = c->image();
    const auto slash = image.rfind('/');
    const auto colon = image.rfind(':');
    const bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
    const bool latest = !tagged || image.substr(colon + 1) == "latest";
    c->set_image_pull_policy(latest ? "Always" : "IfNotPresent");
  }
  if (c->termination_message_path().empty()) {
    c->set_termination_message_path("/dev/termination-log");
  }
  if (c->termination_message_policy().empty()) c->set_termination_message_policy("File");
  for (auto& port : *c->mutable_ports()) {
    if (port.protocol().empty()) port.set_protocol("TCP");
  }
  // A limit without a request asks for as much as it allows, as in Kubernetes.
  auto* requests = c->mutable_resources()->mutable_requests();
  for (const auto& [name, limit] : c->resources().limits()) {
    if (!requests->contains(name)) (*requests)[name] = limit;
  }
  if (c->has_liveness_probe()) DefaultProbe(c->mutable_liveness_probe());
  if (c->has_readiness_probe()) DefaultProbe(c->mutable_readiness_probe());
  if (c->has_startup_probe()) DefaultProbe(c->mutable_startup_probe());
}

void DefaultPodSpec(PodSpec* spec) {
  if (spec->restart_policy().empty()) spec->set_restart_policy("Always");
  if (!spec->has_termination_grace_period_seconds()) {
    spec->set_termination_grace_period_seconds(kDefaultGracePeriod);
  }
  if (spec->dns_policy().empty()) spec->set_dns_policy("ClusterFirst");
  if (spec->scheduler_name().empty()) spec->set_scheduler_name("default-scheduler");
  for (auto& c : *spec->mutable_containers()) DefaultContainer(&c);
  for (auto& c : *spec->mutable_init_containers()) DefaultContainer(&c);
  for (auto& t : *spec->mutable_tolerations()) {
    if (t.operator_().empty()) t.set_operator_("Equal");
  }
}

// Pod templates get the pod defaults; the admission-time tolerations (AddDefaultTolerations)
// come to each pod when it is created from the template.
void DefaultTemplate(PodTemplateSpec* t) { DefaultPodSpec(t->mutable_spec()); }

void DefaultJobSpec(JobSpec* spec) {
  if (!spec->has_completions() && !spec->has_parallelism()) {
    spec->set_completions(1);
    spec->set_parallelism(1);
  } else if (!spec->has_parallelism()) {
    spec->set_parallelism(1);
  }
  if (!spec->has_backoff_limit()) spec->set_backoff_limit(6);
  if (spec->completion_mode().empty()) spec->set_completion_mode("NonIndexed");
  if (!spec->has_suspend()) spec->set_suspend(false);
  DefaultTemplate(spec->mutable_template_());
}

IntOrString Percent(int p) {
  IntOrString v;
  v.set_string_value(std::to_string(p) + "%");
  return v;
}

bool IsLegacy(const Object& obj) {
  return obj.written_api_version != obj.info->api_version() && !obj.written_api_version.empty();
}

// Legacy workloads without a selector select their template's labels.
void SelectorFromTemplate(LabelSelector* selector, const PodTemplateSpec& t) {
  if (selector->match_labels().empty() && selector->match_expressions().empty()) {
    *selector->mutable_match_labels() = t.metadata().labels();
  }
}

}  // namespace

void Default(Object& obj) {
  google::protobuf::Message* m = obj.message.get();
  ObjectMeta* meta = nullptr;
  const auto* meta_field = m->GetDescriptor()->FindFieldByName("metadata");
  if (meta_field) meta = static_cast<ObjectMeta*>(m->GetReflection()->MutableMessage(m, meta_field));
  if (meta && obj.info->namespaced && meta->namespace_().empty()) meta->set_namespace_("default");

  const std::string& kind = obj.info->kind;
  if (kind == "Pod") {
    DefaultPodSpec(static_cast<Pod*>(m)->mutable_spec());
  } else if (kind == "Deployment") {
    auto* spec = static_cast<Deployment*>(m)->mutable_spec();
    if (!spec->has_replicas()) spec->set_replicas(1);
    if (IsLegacy(obj)) SelectorFromTemplate(spec->mutable_selector(), spec->template_());
    auto* strategy = spec->mutable_strategy();
    if (strategy->type().empty()) strategy->set_type("RollingUpdate");
    if (strategy->type() == "RollingUpdate") {
      auto* ru = strategy->mutable_rolling_update();
      if (!ru->has_max_surge()) *ru->mutable_max_surge() = Percent(25);
      if (!ru->has_max_unavailable()) *ru->mutable_max_unavailable() = Percent(25);
    }
    if (!spec->has_revision_history_limit()) spec->set_revision_history_limit(10);
    if (!spec->has_progress_deadline_seconds()) spec->set_progress_deadline_seconds(600);
    DefaultTemplate(spec->mutable_template_());
  } else if (kind == "ReplicaSet") {
    auto* spec = static_cast<ReplicaSet*>(m)->mutable_spec();
    if (!spec->has_replicas()) spec->set_replicas(1);
    if (IsLegacy(obj)) SelectorFromTemplate(spec->mutable_selector(), spec->template_());
    DefaultTemplate(spec->mutable_template_());
  } else if (kind == "ReplicationController") {
    auto* rc = static_cast<ReplicationController*>(m);
    auto* spec = rc->mutable_spec();
    if (!spec->has_replicas()) spec->set_replicas(1);
    if (spec->selector().empty()) *spec->mutable_selector() = spec->template_().metadata().labels();
    if (rc->metadata().labels().empty()) {
      *rc->mutable_metadata()->mutable_labels() = spec->template_().metadata().labels();
    }
    DefaultTemplate(spec->mutable_template_());
  } else if (kind == "DaemonSet") {
    auto* spec = static_cast<DaemonSet*>(m)->mutable_spec();
    if (IsLegacy(obj)) SelectorFromTemplate(spec->mutable_selector(), spec->template_());
    auto* us = spec->mutable_update_strategy();
    if (us->type().empty()) us->set_type("RollingUpdate");
    if (us->type() == "RollingUpdate") {
      auto* ru = us->mutable_rolling_update();
      if (!ru->has_max_unavailable()) ru->mutable_max_unavailable()->set_int_value(1);
      if (!ru->has_max_surge()) ru->mutable_max_surge()->set_int_value(0);
    }
    if (!spec->has_revision_history_limit()) spec->set_revision_history_limit(10);
    DefaultTemplate(spec->mutable_template_());
  } else if (kind == "Job") {
    DefaultJobSpec(static_cast<Job*>(m)->mutable_spec());
  } else if (kind == "CronJob") {
    auto* spec = static_cast<CronJob*>(m)->mutable_spec();
    if (spec->concurrency_policy().empty()) spec->set_concurrency_policy("Allow");
    if (!spec->has_suspend()) spec->set_suspend(false);
    if (!spec->has_successful_jobs_history_limit()) spec->set_successful_jobs_history_limit(3);
    if (!spec->has_failed_jobs_history_limit()) spec->set_failed_jobs_history_limit(1);
    DefaultJobSpec(spec->mutable_job_template()->mutable_spec());
  }
}

}  // namespace mkube::api
