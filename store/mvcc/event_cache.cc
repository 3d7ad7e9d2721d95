#include "store/mvcc/event_cache.h"

#include <algorithm>

namespace mkube::store::mvcc {
namespace {

size_t EventBytes(const mvccpb::Event& ev) {
  return ev.kv().key().size() + ev.kv().value().size() + ev.prev_kv().value().size() + 64;
}

}  // namespace

void EventCache::SetFloor(int64_t floor) {
  absl::MutexLock lock(&mu_);
  floor_ = floor;
}

void EventCache::Add(EventList&& events) {
  absl::MutexLock lock(&mu_);
  for (auto& ev : events) {
    bytes_ += EventBytes(ev);
    events_.push_back(std::move(ev));
  }
  // Trim whole revisions from the front.
  while (bytes_ > max_bytes_ && !events_.empty()) {
    const int64_t rev = events_.front().kv().mod_revision();
    while (!events_.empty() && events_.front().kv().mod_revision() == rev) {
      bytes_ -= EventBytes(events_.front());
      events_.pop_front();
    }
    floor_ = rev + 1;
  }
}

std::optional<int64_t> EventCache::Read(int64_t from, int64_t to, size_t max_events,
                                        std::vector<mvccpb::Event>* out) const {
  int64_t last = from - 1;
  absl::MutexLock lock(&mu_);
  if (from < floor_) return std::nullopt;
  // Binary search the first event at or after `from` (the cache is in revision order).
  auto it = std::lower_bound(events_.begin(), events_.end(), from,
                             [](const mvccpb::Event& ev, int64_t r) {
                               return ev.kv().mod_revision() < r;
                             });
  size_t taken = 0;
  for (; it != events_.end(); ++it) {
    const int64_t rev = it->kv().mod_revision();
    if (rev > to) break;
    if (taken >= max_events && rev != last) break;
    out->push_back(*it);
    ++taken;
    last = rev;
  }
  // Revisions without events up to `to` are read too.
  if (it == events_.end() || it->kv().mod_revision() > to) last = to;
  return last;
}

}  // namespace mkube::store::mvcc
