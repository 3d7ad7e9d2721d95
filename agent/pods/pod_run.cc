#include "agent/pods/pod_run.h"

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace mkube::agent::pods {

std::string ContainerRun::LogPath(int instance) const {
  return fmt::format("{}/{}.log", log_dir, instance);
}

std::string ContainerRun::RecordPath(int instance) const {
  return fmt::format("{}/{}.pid", log_dir, instance);
}

std::string ContainerRun::ExitPath(int instance) const {
  return fmt::format("{}/{}.exit", log_dir, instance);
}

void ContainerRun::RecordEnd(api::ContainerStateTerminated how) {
  previous = std::move(last);
  last = std::move(how);
}

const api::Container* PodRun::Spec(const std::string& container) const {
  for (const auto& s : pod->spec().containers()) {
    if (s.name() == container) return &s;
  }
  return nullptr;
}

ContainerRun* PodRun::Find(const std::string& container) {
  for (auto& c : containers) {
    if (c.name == container) return &c;
  }
  return nullptr;
}

const ContainerRun* PodRun::Find(const std::string& container) const {
  return const_cast<PodRun*>(this)->Find(container);
}

bool PodRun::AnyRunning() const {
  for (const auto& c : containers) {
    if (c.Running()) return true;
  }
  return false;
}

absl::Status FinalDelete(client::ApiClient* client, const api::ObjectMeta& meta) {
  apiserver::DeleteRequest req;
  req.set_resource("pods");
  req.set_namespace_(meta.namespace_());
  req.set_name(meta.name());
  req.set_grace_period_seconds(0);
  req.mutable_preconditions()->set_uid(meta.uid());
  auto r = client->Delete(req);
  if (r.ok() || r.status().code() == absl::StatusCode::kNotFound ||
      r.status().code() == absl::StatusCode::kAborted) {
    return absl::OkStatus();
  }
  return r.status();
}

std::string PodPhase(const PodRun& run) {
  bool all_done = true, all_ok = true;
  for (const auto& c : run.containers) {
    const bool ever_ran = c.Running() || c.last.has_value();
    if (!ever_ran) return "Pending";
    if (!c.done) all_done = false;
    if (c.done && c.last && c.last->exit_code() != 0) all_ok = false;
  }
  if (!all_done) return "Running";
  return all_ok ? "Succeeded" : "Failed";
}

namespace {

void SetCondition(api::PodStatus* status, const api::PodStatus* before, const std::string& type,
                  bool value, const std::string& reason, const std::string& message,
                  absl::Time now) {
  auto* c = status->add_conditions();
  c->set_type(type);
  c->set_status(value ? "True" : "False");
  c->set_reason(reason);
  c->set_message(message);
  c->set_last_transition_time(Rfc3339(now));
  if (before) {
    for (const auto& old : before->conditions()) {
      if (old.type() == type && old.status() == c->status()) {
        c->set_last_transition_time(old.last_transition_time());
      }
    }
  }
}

}  // namespace

api::PodStatus BuildStatus(const PodRun& run, const std::string& host_ip, absl::Time now) {
  api::PodStatus st;
  const api::PodStatus* before = run.pod ? &run.pod->status() : nullptr;
  st.set_phase(PodPhase(run));
  st.set_host_ip(host_ip);
  if (!run.ip.empty()) {
    st.set_pod_ip(run.ip);
    st.add_pod_ips()->set_ip(run.ip);
  }
  st.set_start_time(Rfc3339(run.start_time));
  if (before) st.set_qos_class(before->qos_class());
  std::vector<std::string> unready;
  for (const auto& c : run.containers) {
    auto* cs = st.add_container_statuses();
    cs->set_name(c.name);
    cs->set_restart_count(c.restart_count);
    cs->set_container_id(c.container_id);
    cs->set_image_id(c.image_id);
    const api::Container* spec = run.Spec(c.name);
    if (spec) cs->set_image(spec->image());
    // Started once its startup probe (if any) succeeded; ready once its readiness probe did.
    const bool started = c.Running() && (!spec || !spec->has_startup_probe() || c.startup.ok);
    const bool running =
        started && !run.terminating && (!spec || !spec->has_readiness_probe() || c.readiness.ok);
    cs->set_ready(running);
    cs->set_started(started);
    if (c.Running()) {
      cs->mutable_state()->mutable_running()->set_started_at(Rfc3339(c.started_at));
      if (c.last) *cs->mutable_last_state()->mutable_terminated() = *c.last;
    } else if (c.done && c.last) {
      *cs->mutable_state()->mutable_terminated() = *c.last;
      if (c.previous) *cs->mutable_last_state()->mutable_terminated() = *c.previous;
    } else {
      auto* w = cs->mutable_state()->mutable_waiting();
      w->set_reason(c.waiting_reason.empty() ? "ContainerCreating" : c.waiting_reason);
      w->set_message(c.waiting_message);
      if (c.last) *cs->mutable_last_state()->mutable_terminated() = *c.last;
    }
    if (!running) unready.push_back(c.name);
  }
  const bool completed = st.phase() == "Succeeded" || st.phase() == "Failed";
  const std::string not_ready_reason = completed ? "PodCompleted" : "ContainersNotReady";
  const std::string not_ready_message =
      completed ? ""
                : fmt::format("containers with unready status: [{}]", absl::StrJoin(unready, " "));
  SetCondition(&st, before, "Initialized", true, "", "", now);
  SetCondition(&st, before, "Ready", unready.empty(), unready.empty() ? "" : not_ready_reason,
               unready.empty() ? "" : not_ready_message, now);
  SetCondition(&st, before, "ContainersReady", unready.empty(),
               unready.empty() ? "" : not_ready_reason, unready.empty() ? "" : not_ready_message,
               now);
  SetCondition(&st, before, "PodScheduled", true, "", "", now);
  return st;
}

}  // namespace mkube::agent::pods
