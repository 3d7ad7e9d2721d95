#include "client/leader_election.h"

#include "api/object.h"
#include "base/log.h"
#include "base/status.h"

namespace mkube::client {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("leader");
  return logger;
}

int32_t Seconds(absl::Duration d) {
  return static_cast<int32_t>(std::max<int64_t>(1, absl::ToInt64Seconds(d)));
}

// Kubernetes' MicroTime, as leases carry it.
std::string MicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

}  // namespace

LeaderElector::LeaderElector(ApiClient* client, Config config, Clock* clock)
    : client_(client), config_(std::move(config)), clock_(clock) {}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status LeaderElector::TryAcquireOrRenew() {
  const std::string now = MicroTime(clock_->Now());
  auto current = client_->Get<api::Lease>("leases", config_.lease_namespace, config_.lease_name);
  if (!current.ok()) {
    if (current.status().code() != absl::StatusCode::kNotFound) return current.status();
    api::Lease lease;
    lease.mutable_metadata()->set_name(config_.lease_name);
    lease.mutable_metadata()->set_namespace_(config_.lease_namespace);
    auto* spec = lease.mutable_spec();
    spec->set_holder_identity(config_.identity);
    spec->set_lease_duration_seconds(Seconds(config_.lease_duration));
    spec->set_acquire_time(now);
    spec->set_renew_time(now);
    spec->set_lease_transitions(0);
    return client_->Create("leases", config_.lease_namespace, lease).status();
  }
  const auto& spec = current->spec();
  const absl::Time seen = clock_->Now();
  if (spec.holder_identity() != observed_holder_ || spec.renew_time() != observed_renew_) {
    observed_holder_ = spec.holder_identity();
    observed_renew_ = spec.renew_time();
    observed_at_ = seen;
  }
  const bool mine = spec.holder_identity() == config_.identity;
  const bool expired =
      spec.holder_identity().empty() || seen - observed_at_ > config_.lease_duration;
  if (!mine && !expired) {
    return absl::FailedPreconditionError("held by " + spec.holder_identity());
  }
  api::Lease next = *current;
  auto* s = next.mutable_spec();
  if (!mine) {
    s->set_holder_identity(config_.identity);
    s->set_acquire_time(now);
    s->set_lease_transitions(spec.lease_transitions() + 1);
  }
  s->set_lease_duration_seconds(Seconds(config_.lease_duration));
  s->set_renew_time(now);
  // The update carries the version read: if another candidate wrote meanwhile, it conflicts.
  MKUBE_ASSIGN_OR_RETURN(auto updated, client_->Update("leases", config_.lease_namespace, next));
  observed_holder_ = updated.spec().holder_identity();
  observed_renew_ = updated.spec().renew_time();
  observed_at_ = clock_->Now();
  return absl::OkStatus();
}

void LeaderElector::Release() {
  auto current = client_->Get<api::Lease>("leases", config_.lease_namespace, config_.lease_name);
  if (!current.ok() || current->spec().holder_identity() != config_.identity) return;
  api::Lease next = *current;
  next.mutable_spec()->clear_holder_identity();
  next.mutable_spec()->set_lease_duration_seconds(1);
  client_->Update("leases", config_.lease_namespace, next).IgnoreError();
}

void LeaderElector::Run() {
  for (;;) {
    const absl::Time started = clock_->Now();
    const absl::Status tried = TryAcquireOrRenew();
    const bool holds = tried.ok();
    const absl::Time now = clock_->Now();
    if (holds) last_renewed_ = now;
    if (!holds && leading_) {
      // Each failed renewal is told: a lost lease is then explained by what came before it.
      Log().warn("{} could not renew the lease {}/{} (last renewed {} ago; this try took {}): {}",
                 config_.identity, config_.lease_namespace, config_.lease_name,
                 absl::FormatDuration(now - last_renewed_), absl::FormatDuration(now - started),
                 tried.ToString());
    }
    if (holds && !leading_) {
      leading_ = true;
      Log().info("{} became the leader of {}/{}", config_.identity, config_.lease_namespace,
                 config_.lease_name);
      if (config_.on_started_leading) config_.on_started_leading();
    } else if (!holds && leading_ && now - last_renewed_ > config_.renew_deadline) {
      leading_ = false;
      Log().warn("{} lost the lease {}/{}", config_.identity, config_.lease_namespace,
                 config_.lease_name);
      if (config_.on_stopped_leading) config_.on_stopped_leading();
    }
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (clock_->AwaitWithTimeout(&mu_, absl::Condition(&stopping), config_.retry_period)) break;
  }
  if (leading_) {
    Release();
    leading_ = false;
    if (config_.on_stopped_leading) config_.on_stopped_leading();
  }
}

}  // namespace mkube::client
