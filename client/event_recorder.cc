#include "client/event_recorder.h"

#include <random>

#include "api/object.h"
#include "base/log.h"
#include "fmt/format.h"

namespace mkube::client {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("events");
  return logger;
}

constexpr absl::Duration kAggregateWindow = absl::Minutes(10);

// Kubernetes names events <object>.<16 hex digits>.
std::string EventName(const std::string& object) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{}.{:016x}", object, rng());
}

}  // namespace

EventRecorder::EventRecorder(ApiClient* client, std::string component, std::string host,
                             size_t max_queued, Clock* clock)
    : client_(client),
      clock_(clock),
      component_(std::move(component)),
      host_(std::move(host)),
      max_queued_(max_queued),
      thread_([this] { Loop(); }) {}

EventRecorder::~EventRecorder() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void EventRecorder::Record(const google::protobuf::Message& obj, const std::string& type,
                           const std::string& reason, const std::string& message) {
  const auto& meta = api::MetaOf(obj);
  api::Event ev;
  ev.set_api_version("v1");
  ev.set_kind("Event");
  ev.mutable_metadata()->set_namespace_(meta.namespace_().empty() ? "default" : meta.namespace_());
  auto* ref = ev.mutable_involved_object();
  ref->set_kind(obj.GetDescriptor()->name());
  ref->set_namespace_(meta.namespace_());
  ref->set_name(meta.name());
  ref->set_uid(meta.uid());
  ref->set_resource_version(meta.resource_version());
  ev.set_type(type);
  ev.set_reason(reason);
  ev.set_message(message);
  ev.mutable_source()->set_component(component_);
  ev.mutable_source()->set_host(host_);
  ev.set_reporting_component(component_);
  ev.set_reporting_instance(host_);
  const absl::Time at = clock_->Now();
  const std::string now = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", at, absl::UTCTimeZone());
  ev.set_first_timestamp(now);
  ev.set_last_timestamp(now);
  ev.set_count(1);
  absl::MutexLock lock(&mu_);
  std::optional<EventCorrelator::Correlated> c = correlator_.Correlate(std::move(ev), at);
  if (!c) {
    ++filtered_;
    return;
  }
  if (queue_.size() >= max_queued_) {
    queue_.pop_front();
    ++dropped_;
  }
  queue_.push_back(std::move(*c));
}

void EventRecorder::Flush() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return (queue_.empty() && in_flight_ == 0) || stopping_;
  };
  mu_.Await(absl::Condition(&idle));
}

size_t EventRecorder::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

size_t EventRecorder::filtered() const {
  absl::MutexLock lock(&mu_);
  return filtered_;
}

void EventRecorder::Loop() {
  for (;;) {
    EventCorrelator::Correlated c;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;  // what has not been posted is dropped, as client-go does
      c = std::move(queue_.front());
      queue_.pop_front();
      ++in_flight_;
    }
    Post(std::move(c));
    absl::MutexLock lock(&mu_);
    --in_flight_;
  }
}

void EventRecorder::Post(EventCorrelator::Correlated c) {
  api::Event& ev = c.event;
  const auto& ref = ev.involved_object();
  const std::string& key = c.key;
  const absl::Time now = clock_->Now();
  if (Posted* p = posted_.Find(key); p && now - p->last < kAggregateWindow) {
    ev.mutable_metadata()->set_name(p->name);
    ev.set_count(p->count + 1);
    ev.set_first_timestamp(p->first_timestamp);
    // Unconditional: only this recorder writes its events.
    auto r = client_->Update<api::Event>("events", p->ns, ev);
    if (r.ok()) {
      p->count = ev.count();
      p->last = now;
      return;
    }
    posted_.Erase(key);  // gone (expired, deleted): post it anew
  }
  ev.mutable_metadata()->set_name(EventName(ref.name()));
  auto r = client_->Create<api::Event>("events", ev.metadata().namespace_(), ev);
  if (!r.ok()) {
    Log().warn("event {} {} about {}/{}: not recorded: {}", ev.type(), ev.reason(),
               ref.namespace_(), ref.name(), r.status().ToString());
    return;
  }
  posted_[key] = {ev.metadata().name(), ev.metadata().namespace_(), 1, ev.first_timestamp(), now};
}

}  // namespace mkube::client
