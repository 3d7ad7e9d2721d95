// The fan-out of a watch cache: handing each store response's events to the watchers they
// concern under the cache's lock, and pushing them to the sinks outside it.
#include "apiserver/cache/watch_cache.h"

#include "absl/time/time.h"
#include "fmt/format.h"

namespace mkube::apiserver::cache {
namespace {

absl::Status TooSlow() {
  return absl::ResourceExhaustedError(
      "watch closed: the client did not keep up; resume from its last resourceVersion");
}

// A batch buffer larger than this is given back once pushed rather than kept for the next.
constexpr size_t kKeptBatchCapacity = 1024;

}  // namespace

std::optional<Event> WatchCache::ForWatcher(const Filter& filter, const Event& e) {
  const bool now = filter.Matches(*e.entry);
  Event send = e;
  if (e.type == EventType::kModified && e.prev) {
    const bool was = filter.Matches(*e.prev);
    if (!now && !was) return std::nullopt;
    if (now && !was) send.type = EventType::kAdded;
    if (!now && was) send.type = EventType::kDeleted;
  } else if (!now) {
    return std::nullopt;
  }
  return send;
}

void WatchCache::HandOver(const std::vector<Event>& events, std::vector<WatcherPtr>* ready) {
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    Watcher& w = *it->second;
    // Selected before taking the watcher's lock: most watchers select little of what passes.
    for (const Event& e : events) {
      std::optional<Event> send = ForWatcher(w.filter, e);
      if (send) matched_.push_back(std::move(*send));
    }
    if (matched_.empty()) {
      ++it;
      continue;
    }
    Offered offered = Offered::kQueued;
    {
      absl::MutexLock lock(&w.mu);
      if (!w.ended) {
        const size_t before = w.due.size();
        w.due.insert(w.due.end(), std::make_move_iterator(matched_.begin()),
                     std::make_move_iterator(matched_.end()));
        offered = Offer(w, before);
      }
    }
    matched_.clear();
    if (offered == Offered::kTaken) ready->push_back(it->second);
    if (offered == Offered::kDropped) {
      it = watchers_.erase(it);
    } else {
      ++it;
    }
  }
}

WatchCache::Offered WatchCache::Offer(Watcher& w, size_t before) const {
  if (w.due.size() == before) return Offered::kQueued;  // nothing for it
  if (!w.delivering) {
    w.delivering = true;
    w.due.swap(w.sending);  // both empty but for what was just handed over
    return Offered::kTaken;
  }
  if (w.due.size() <= options_.pending_events) return Offered::kQueued;
  w.ended = true;
  w.close = TooSlow();
  w.due.clear();
  return Offered::kDropped;
}

void WatchCache::Deliver(Watcher& w) {
  bool refused = false;
  std::optional<absl::Status> close;
  for (;;) {
    for (const Event& e : w.sending) {
      if (!w.sink->Push(e, false)) {
        refused = true;
        break;
      }
    }
    if (w.sending.capacity() > kKeptBatchCapacity) {
      std::vector<Event>().swap(w.sending);
    } else {
      w.sending.clear();
    }
    absl::MutexLock lock(&w.mu);
    if (refused && !w.ended) {
      w.ended = true;
      w.close = TooSlow();
    } else {
      refused = false;  // ended by someone else, who has taken it out of the map
    }
    if (w.ended) {
      // The token is kept: nothing is pushed to an ended watcher again.
      w.due.clear();
      close = std::move(w.close);
      w.close.reset();
      break;
    }
    if (w.due.empty()) {
      w.delivering = false;
      return;
    }
    w.due.swap(w.sending);
  }
  if (refused) {
    absl::MutexLock lock(&mu_);
    watchers_.erase(w.id);
  }
  if (close) w.sink->Close(*close);
}

std::vector<WatchCache::WatcherPtr> WatchCache::EndAll(const absl::Status& why) {
  std::vector<WatcherPtr> idle;
  for (auto& [id, w] : watchers_) {
    absl::MutexLock lock(&w->mu);
    if (w->ended) continue;  // its pusher is closing it
    w->ended = true;
    w->due.clear();
    if (w->delivering) {
      w->close = why;
    } else {
      w->delivering = true;  // for good: Close is the last call
      idle.push_back(w);
    }
  }
  watchers_.clear();
  return idle;
}

void WatchCache::Close(const std::vector<WatcherPtr>& ended, const absl::Status& why) {
  for (const WatcherPtr& w : ended) w->sink->Close(why);
}

void WatchCache::Bookmarks() {
  std::vector<WatcherPtr> ready;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                               absl::FromChrono(options_.bookmark_interval))) {
        return;
      }
      // After every event up to revision_ in each watcher's order: all were handed over.
      const Event bookmark{EventType::kBookmark, nullptr, revision_, nullptr};
      for (auto it = watchers_.begin(); it != watchers_.end();) {
        Watcher& w = *it->second;
        Offered offered = Offered::kQueued;
        if (w.bookmarks) {
          absl::MutexLock wlock(&w.mu);
          if (!w.ended) {
            w.due.push_back(bookmark);
            offered = Offer(w, w.due.size() - 1);
          }
        }
        if (offered == Offered::kTaken) ready.push_back(it->second);
        if (offered == Offered::kDropped) {
          it = watchers_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (const WatcherPtr& w : ready) Deliver(*w);
    ready.clear();
  }
}

absl::StatusOr<uint64_t> WatchCache::Watch(Filter filter, int64_t from_rv, bool bookmarks,
                                           WatchSinkPtr sink) {
  std::vector<Event> backlog;
  WatcherPtr w;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("apiserver shutting down");
    if (from_rv == 0) {
      for (const auto& [key, e] : objects_) {
        if (!filter.Matches(*e)) continue;
        backlog.push_back(Event{EventType::kAdded, e, e->revision, nullptr});
      }
    } else {
      if (from_rv < window_start_) {
        return absl::OutOfRangeError(
            fmt::format("too old resource version: {} ({})", from_rv, window_start_ + 1));
      }
      for (const auto& e : window_) {
        if (e.revision <= from_rv) continue;
        if (std::optional<Event> send = ForWatcher(filter, e)) backlog.push_back(std::move(*send));
      }
    }
    // Registered holding its delivery token: what is handed over from now on waits in `due`
    // until the backlog, everything up to now, has been pushed.
    const uint64_t id = next_id_++;
    w = std::make_shared<Watcher>(id, std::move(filter), bookmarks, std::move(sink));
    watchers_.emplace(id, w);
  }
  for (const Event& e : backlog) w->sink->Push(e, true);
  backlog = {};
  Deliver(*w);
  return w->id;
}

void WatchCache::Unwatch(uint64_t id) {
  WatcherPtr w;
  {
    absl::MutexLock lock(&mu_);
    auto it = watchers_.find(id);
    if (it == watchers_.end()) return;
    w = std::move(it->second);
    watchers_.erase(it);
  }
  absl::MutexLock lock(&w->mu);
  if (w->ended) return;
  w->ended = true;
  w->due.clear();
  w->delivering = true;  // for good, if no thread had it: nothing is pushed to it again
}

size_t WatchCache::watcher_count() const {
  absl::MutexLock lock(&mu_);
  return watchers_.size();
}

}  // namespace mkube::apiserver::cache
