#include "agent/pods/probe_manager.h"

#include <signal.h>

#include <algorithm>
#include <set>

#include "fmt/format.h"

namespace mkube::agent::pods {

ProbeManager::ProbeManager(ProbedContainers* pods, runtime::ContainerRuntime* runtime,
                           client::EventRecorder* events, client::Clock* clock)
    : pods_(pods), runtime_(runtime), events_(events), clock_(clock) {}

void ProbeManager::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ProbeManager::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ProbeManager::Loop() {
  const auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (clock_->AwaitWithTimeout(&mu_, absl::Condition(&stopping), absl::Milliseconds(100))) {
        return;
      }
    }
    std::set<std::string> probed;  // keys of the pods probed
    for (DueProbe& d : pods_->DueProbes()) {
      d.target.container = &d.spec;
      const absl::Status result = RunProbe(d.probe, d.target);
      if (auto key = pods_->RecordProbeResult(d, result)) probed.insert(*key);
    }
    for (const auto& key : probed) pods_->Resync(key);
    // Monitors exit just after their container: reaped here too, as pods that are done are
    // not synced again.
    runtime_->ReapMonitors();
  }
}

void ProbeManager::CollectDue(const PodRun& run, absl::Time now, std::vector<DueProbe>* due) {
  for (const auto& c : run.containers) {
    if (!c.Running() || c.kill_at != absl::InfiniteFuture()) continue;  // not while killed
    const api::Container* spec = run.Spec(c.name);
    if (!spec) continue;
    auto add = [&](const char* kind, const api::Probe& probe) {
      due->push_back({run.uid,
                      c.name,
                      kind,
                      c.pid,
                      probe,
                      *spec,
                      {run.ip, {c.env, c.dir, c.pid, c.isolated, c.identity, c.cgroups}, nullptr}});
    };
    if (spec->has_startup_probe() && !c.startup.ok) {
      if (now >= c.startup.next) add("Startup", spec->startup_probe());
      continue;  // the others wait until it succeeds
    }
    if (spec->has_liveness_probe() && now >= c.liveness.next) {
      add("Liveness", spec->liveness_probe());
    }
    if (spec->has_readiness_probe() && now >= c.readiness.next) {
      add("Readiness", spec->readiness_probe());
    }
  }
}

void ProbeManager::StartProbing(ContainerRun* c, const api::Container& spec, absl::Time now) {
  auto arm = [&](ProbeState* st, const api::Probe* probe, bool ok) {
    *st = ProbeState();
    st->ok = ok;
    if (probe) st->next = now + TimingOf(*probe).initial_delay;
  };
  arm(&c->startup, spec.has_startup_probe() ? &spec.startup_probe() : nullptr, false);
  arm(&c->liveness, spec.has_liveness_probe() ? &spec.liveness_probe() : nullptr, true);
  arm(&c->readiness, spec.has_readiness_probe() ? &spec.readiness_probe() : nullptr, false);
}

void ProbeManager::ResumeProbing(ContainerRun* c, absl::Time now) {
  c->startup.ok = c->liveness.ok = true;
  c->startup.next = c->liveness.next = c->readiness.next = now;
}

void ProbeManager::RecordResult(ContainerRun* c, PodRun* run, const std::string& kind,
                                const api::Probe& probe, const absl::Status& result,
                                absl::Time now) {
  ProbeState& st = kind == "Startup" ? c->startup : kind == "Liveness" ? c->liveness : c->readiness;
  const ProbeTiming timing = TimingOf(probe);
  st.next = now + timing.period;
  if (result.ok()) {
    st.failures = 0;
    if (++st.successes >= timing.success_threshold) st.ok = true;
    return;
  }
  st.successes = 0;
  ++st.failures;
  events_->Record(*run->pod, "Warning", "Unhealthy",
                  fmt::format("{} probe failed: {}", kind, std::string(result.message())));
  if (st.failures < timing.failure_threshold) return;
  st.ok = false;
  if (kind == "Readiness") return;
  // A failed liveness or startup probe: the container is killed, and restarted by its policy.
  const int64_t grace = probe.has_termination_grace_period_seconds()
                            ? probe.termination_grace_period_seconds()
                            : run->pod->spec().termination_grace_period_seconds();
  events_->Record(*run->pod, "Normal", "Killing",
                  fmt::format("Container {} failed {} probe, will be restarted", c->name,
                              kind == "Liveness" ? "liveness" : "startup"));
  runtime_->Signal(c->pid, grace > 0 ? SIGTERM : SIGKILL);
  c->kill_at = now + absl::Seconds(std::max<int64_t>(0, grace));
}

}  // namespace mkube::agent::pods
