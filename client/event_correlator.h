#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "proto/api/core.pb.h"

namespace mkube::client {

// A map that keeps the `capacity` most recently used keys, as the LRU caches of client-go's
// event correlator: a source that reports on ever new objects costs bounded memory.
template <typename V>
class LruMap {
 public:
  explicit LruMap(size_t capacity) : capacity_(capacity) {}

  // The value of `key`, made (default) when absent; it becomes the most recently used.
  V& operator[](const std::string& key) {
    if (auto it = index_.find(key); it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    order_.emplace_front(key, V{});
    index_[key] = order_.begin();
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }
  // The value of `key` (now the most recently used), or null.
  V* Find(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }
  void Erase(const std::string& key) {
    if (auto it = index_.find(key); it != index_.end()) {
      order_.erase(it->second);
      index_.erase(it);
    }
  }
  size_t size() const { return order_.size(); }

 private:
  using Entries = std::list<std::pair<std::string, V>>;
  size_t capacity_;
  Entries order_;  // most recent first
  absl::flat_hash_map<std::string, typename Entries::iterator> index_;
};

// What client-go's EventCorrelator does before an event is posted, with its defaults:
// - Aggregation: events about one object from one source with the same type and reason but
//   ever different messages are folded once ten different messages were seen within ten
//   minutes; from then on one event "(combined from similar events): <latest message>"
//   stands for them all and its count rises.
// - Spam filter: each source may post (or update) 25 events about one object at once, then
//   one more every five minutes; the rest are dropped.
// Not thread-safe: the recorder calls it under its lock.
class EventCorrelator {
 public:
  static constexpr size_t kCacheEntries = 4096;
  static constexpr int kAggregateMaxEvents = 10;
  static constexpr absl::Duration kAggregateInterval = absl::Minutes(10);
  static constexpr double kSpamBurst = 25;
  static constexpr absl::Duration kSpamRefill = absl::Minutes(5);  // one token per

  struct Correlated {
    api::Event event;  // its message folded when aggregated
    std::string key;   // events with the same key update one posted event
  };

  // The event to post and its key, or nothing when the spam filter drops it.
  std::optional<Correlated> Correlate(api::Event event, absl::Time now);

 private:
  struct Aggregate {
    std::set<std::string> messages;  // the different messages seen, up to the maximum
    absl::Time last = absl::InfinitePast();
  };
  struct Bucket {
    double tokens = kSpamBurst;
    absl::Time last = absl::InfinitePast();
  };

  LruMap<Aggregate> aggregates_{kCacheEntries};
  LruMap<Bucket> buckets_{kCacheEntries};
};

}  // namespace mkube::client
