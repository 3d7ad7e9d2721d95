#include "client/leadership.h"

#include "base/log.h"

namespace mkube::client {

void Leadership::Register(CLI::App& app, Flags* f, const std::string& who) {
  app.add_option("--leader-elect", f->enabled, "Take part in leader election (" + who + ")")
      ->capture_default_str();
  app.add_option("--leader-elect-lease-duration", f->lease_duration,
                 "How long a leader's lease lasts unrenewed")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", f->renew_deadline,
                 "How long a leader tries to renew before it gives up")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", f->retry_period, "How often candidates try")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-name", f->resource_name,
                 "The Lease the candidates race for")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-namespace", f->resource_namespace, "Its namespace")
      ->capture_default_str();
  app.add_option("--identity", f->identity, "This candidate's name in the Lease")
      ->capture_default_str();
}

absl::Status Leadership::Check(const Flags& f) {
  auto lease = daemon::PositiveDuration("--leader-elect-lease-duration", f.lease_duration);
  auto renew = daemon::PositiveDuration("--leader-elect-renew-deadline", f.renew_deadline);
  auto retry = daemon::PositiveDuration("--leader-elect-retry-period", f.retry_period);
  for (const auto* d : {&lease, &renew, &retry}) {
    if (!d->ok()) return d->status();
  }
  if (*renew >= *lease) {
    return absl::InvalidArgumentError(
        "--leader-elect-renew-deadline must be shorter than the lease duration");
  }
  return absl::OkStatus();
}

Leadership::Leadership(ApiClient* client, const Flags& f, std::function<void()> lead) {
  Start(client, f, std::move(lead));
}

void Leadership::Start(ApiClient* client, const Flags& f, std::function<void()> lead) {
  if (!f.enabled) {
    lead();
    return;
  }
  LeaderElector::Config c;
  c.lease_namespace = f.resource_namespace;
  c.lease_name = f.resource_name;
  c.identity = f.identity;
  c.lease_duration = *daemon::PositiveDuration("", f.lease_duration);
  c.renew_deadline = *daemon::PositiveDuration("", f.renew_deadline);
  c.retry_period = *daemon::PositiveDuration("", f.retry_period);
  c.on_started_leading = std::move(lead);
  c.on_stopped_leading = [this] {
    if (releasing_.load()) return;  // given up on purpose
    // A leader that lost its lease may have raced another: it exits and starts again as a
    // candidate.
    log::Logger("leader").error("leader election lost: exiting");
    std::_Exit(1);
  };
  elector_ = std::make_unique<LeaderElector>(client, c);
  elector_->Start();
}

Leadership::Leadership(const ClientOptions& options, const Flags& f, std::function<void()> lead)
    : own_client_(f.enabled ? std::make_unique<GrpcClient>(ElectionClientOptions(options, f))
                            : nullptr) {
  Start(own_client_.get(), f, std::move(lead));
}

ClientOptions ElectionClientOptions(ClientOptions options, const Leadership::Flags& flags) {
  const absl::Duration renew = *daemon::PositiveDuration("", flags.renew_deadline);
  options.timeout = std::max(std::chrono::milliseconds(100), absl::ToChronoMilliseconds(renew / 5));
  options.own_connection = true;
  options.wait_for_ready = true;
  options.read_attempts = 1;
  return options;
}

void Leadership::Release() {
  releasing_ = true;
  if (elector_) elector_->Stop();
}

}  // namespace mkube::client
