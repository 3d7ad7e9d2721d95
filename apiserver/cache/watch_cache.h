#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "api/fields.h"
#include "api/kinds.h"
#include "api/labels.h"
#include "apiserver/storage/store_client.h"
#include "google/protobuf/message.h"

namespace mkube::apiserver::cache {

enum class EventType { kAdded, kModified, kDeleted, kBookmark };
const char* EventTypeName(EventType t);

// A transport's encoding of an entry as a watch event of each type, made by the first watcher
// that sends it and shared by every other. Only touched with the cache's lock held (sinks are
// called with it); a copied entry starts without encodings.
class EncodingMemo {
 public:
  EncodingMemo() = default;
  EncodingMemo(const EncodingMemo&) {}
  EncodingMemo& operator=(const EncodingMemo&) { return *this; }
  std::shared_ptr<const void>& slot(EventType t) const { return slots_[static_cast<size_t>(t)]; }

 private:
  mutable std::shared_ptr<const void> slots_[3];  // ADDED, MODIFIED, DELETED
};

// One object as the cache holds it: immutable, shared by every reader.
struct Entry {
  std::string key;  // /registry/<resource>/[<namespace>/]<name>
  const api::KindInfo* kind = nullptr;
  std::string ns;
  std::string name;
  int64_t revision = 0;  // its resourceVersion
  std::shared_ptr<const google::protobuf::Message> object;  // resourceVersion filled in
  std::string bytes;  // object serialized, as sent to clients
  EncodingMemo encoded;
};
using EntryPtr = std::shared_ptr<const Entry>;

struct Event {
  EventType type;
  EntryPtr entry;  // for DELETED, the last state; for BOOKMARK, null
  int64_t revision = 0;
  EntryPtr prev;  // for MODIFIED, the state before, when known
};

// What a list or watch selects.
struct Filter {
  const api::KindInfo* kind = nullptr;
  std::string ns;  // empty: every namespace
  api::Selector labels;
  api::FieldSelector fields;
  bool Matches(const Entry& e) const;
};

// Where a watcher's events go. Push is called with the cache locked, so it only queues and
// never blocks: false means the watcher cannot keep up and is dropped (Close follows with a
// resumable error). A backlog push (the initial objects, a replay from the window) is
// never refused: its size is bounded by the cache, not by the client's speed.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  virtual bool Push(const Event& event, bool backlog) = 0;
  virtual void Close(const absl::Status& why) = 0;
};
using WatchSinkPtr = std::shared_ptr<WatchSink>;

struct CacheOptions {
  std::string prefix = "/registry/";
  size_t window_events = 100000;  // recent events kept for watches from the past
  size_t window_bytes = 128 << 20;  // ... and at most this much of their objects
  std::chrono::milliseconds bookmark_interval = std::chrono::seconds(5);
  // At start, the store's history of up to this many revisions before the initial list is
  // read into the window, so clients resume across an apiserver restart without relisting.
  int64_t backfill_revisions = 10000;
};

// The apiserver's view of the store, fed by ONE store watch: every object by key, and a
// window of recent events. Lists are served from it at a consistent revision and watches fan
// out from it, so clients never cost the store anything.
class WatchCache {
 public:
  WatchCache(storage::StoreClient* store, CacheOptions options = {});
  ~WatchCache();

  absl::Status Start();
  void Stop();

  int64_t revision() const;
  // Waits (up to timeout) until the cache has seen revision `rv`.
  absl::Status WaitFor(int64_t rv, std::chrono::milliseconds timeout);

  struct ListResult {
    std::vector<EntryPtr> items;
    int64_t revision = 0;
    std::string continue_key;  // empty when complete
    int64_t remaining = 0;
  };
  // Items after `continue_after` (a key) in key order, at most `limit` (0: all).
  ListResult List(const Filter& filter, int64_t limit, const std::string& continue_after) const;
  EntryPtr Get(const std::string& key) const;

  // Starts a watch: from_rv 0 sends the current objects as ADDED first; otherwise the events
  // after from_rv, or OUT_OF_RANGE if the window no longer has them.
  absl::StatusOr<uint64_t> Watch(Filter filter, int64_t from_rv, bool bookmarks,
                                 WatchSinkPtr sink);
  void Unwatch(uint64_t id);
  size_t watcher_count() const;

  // Decodes a stored value (for reads that bypass the cache).
  static absl::StatusOr<EntryPtr> Decode(const std::string& key, const std::string& value,
                                         int64_t revision);

 private:
  struct Watcher {
    Filter filter;
    bool bookmarks = false;
    WatchSinkPtr sink;
  };
  absl::Status Relist() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Backfill(int64_t list_revision) ABSL_LOCKS_EXCLUDED(mu_);
  // Keys under <prefix>~mkube/ are the apiserver's own bookkeeping, not objects.
  static constexpr char kMarkerPrefix[] = "~mkube/";
  bool IsMarker(const std::string& key) const;
  void Feed();
  void Bookmarks();
  void Apply(const mvccpb::Event& ev, int64_t revision) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Dispatch(const Event& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the oldest revisions while the window is over its count or byte budget.
  void TrimWindow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The event as a watcher with this filter sees it: objects entering its selection are
  // ADDED, objects leaving it DELETED; nullopt when it does not concern the watcher.
  static std::optional<Event> ForWatcher(const Filter& filter, const Event& e);
  void DropAll(const absl::Status& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  storage::StoreClient* store_;
  CacheOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, EntryPtr> objects_ ABSL_GUARDED_BY(mu_);
  std::deque<Event> window_ ABSL_GUARDED_BY(mu_);
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  // The oldest revision a watch can resume after.
  int64_t window_start_ ABSL_GUARDED_BY(mu_) = 0;
  size_t window_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // object bytes the window holds
  std::map<uint64_t, Watcher> watchers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::unique_ptr<grpc::ClientContext> watch_ctx_ ABSL_GUARDED_BY(mu_);
  std::thread feed_;
  std::thread bookmarks_;
};

}  // namespace mkube::apiserver::cache
