#include "client/event_correlator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace mkube::client {
namespace {

// Source and involved object: what the spam filter counts by.
std::string SourceObjectKey(const api::Event& e) {
  const auto& o = e.involved_object();
  return absl::StrCat(e.source().component(), "\n", e.source().host(), "\n", o.kind(), "\n",
                      o.namespace_(), "\n", o.name(), "\n", o.uid(), "\n", o.api_version());
}

}  // namespace

std::optional<EventCorrelator::Correlated> EventCorrelator::Correlate(api::Event event,
                                                                      absl::Time now) {
  const std::string source_object = SourceObjectKey(event);
  const std::string aggregate_key =
      absl::StrCat(source_object, "\n", event.type(), "\n", event.reason(), "\n",
                   event.reporting_component(), "\n", event.reporting_instance());
  Correlated out;
  Aggregate& a = aggregates_[aggregate_key];
  if (now - a.last > kAggregateInterval) a.messages.clear();
  a.last = now;
  a.messages.insert(event.message());
  if (static_cast<int>(a.messages.size()) < kAggregateMaxEvents) {
    out.key = absl::StrCat(aggregate_key, "\n", event.message());
  } else {
    // Keep the set at its maximum: one more different message is enough to stay folded.
    a.messages.erase(a.messages.begin());
    event.set_message(absl::StrCat("(combined from similar events): ", event.message()));
    out.key = aggregate_key;
  }

  Bucket& b = buckets_[source_object];
  if (b.last != absl::InfinitePast()) {
    b.tokens = std::min(kSpamBurst, b.tokens + (now - b.last) / kSpamRefill);
  }
  b.last = now;
  if (b.tokens < 1) return std::nullopt;
  b.tokens -= 1;
  out.event = std::move(event);
  return out;
}

}  // namespace mkube::client
