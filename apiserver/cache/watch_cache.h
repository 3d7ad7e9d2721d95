#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "api/fields.h"
#include "api/kinds.h"
#include "api/labels.h"
#include "apiserver/storage/storage.h"
#include "google/protobuf/message.h"

namespace mkube::apiserver::cache {

enum class EventType { kAdded, kModified, kDeleted, kBookmark };
const char* EventTypeName(EventType t);

// The encodings that clients share, one set per way of sending objects: gRPC's WatchBatch
// messages, the Kubernetes HTTP API's JSON watch lines, and its JSON objects (for lists and
// gets: kept under ADDED whatever the event).
enum class Encoder { kGrpc, kJsonLine, kJson };
inline constexpr size_t kEncoders = 3;

// The encodings of an entry as a watch event of each type, per encoder, made by the first sink
// that sends it and shared by every other. Sinks run on several threads at once (the feed, the
// callers of new watches, the bookmark thread), so a slot is published atomically: two first
// senders may both encode, one encoding is kept. A copied entry starts without encodings.
class EncodingMemo {
 public:
  // What a transport keeps; it downcasts to its own type.
  class Encoding {
   public:
    virtual ~Encoding() = default;
  };

  EncodingMemo() = default;
  EncodingMemo(const EncodingMemo&) {}
  EncodingMemo& operator=(const EncodingMemo&) = delete;
  ~EncodingMemo() {
    for (auto& slot : slots_) {
      std::unique_ptr<const Encoding> owned(slot.load(std::memory_order_acquire));
    }
  }

  // The encoding by `encoder` for `t` (ADDED, MODIFIED or DELETED); `make()` returns a
  // std::unique_ptr<Encoding> and is called only while there is none.
  template <typename Make>
  const Encoding& GetOrMake(Encoder encoder, EventType t, Make&& make) const {
    std::atomic<const Encoding*>& slot =
        slots_[static_cast<size_t>(encoder) * 3 + static_cast<size_t>(t)];
    if (const Encoding* e = slot.load(std::memory_order_acquire)) return *e;
    std::unique_ptr<const Encoding> made = make();
    const Encoding* seen = nullptr;
    if (slot.compare_exchange_strong(seen, made.get(), std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      return *made.release();
    }
    return *seen;  // another thread's came first; ours is dropped
  }

 private:
  // Per encoder: ADDED, MODIFIED, DELETED. Owned.
  mutable std::atomic<const Encoding*> slots_[kEncoders * 3] = {};
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

// Where a watcher's events go. The cache calls a sink with none of its locks held, from
// whichever thread has the watcher's events to send (the feed, the caller of Watch for the
// backlog, the bookmark thread), but never from two threads at once, and Close last and once.
// Push should only queue: a push that blocks holds up the thread in it (for the feed, every
// watcher after this one), though never lists, gets, or another thread's deliveries. False
// means the watcher cannot keep up and is dropped (Close follows with a resumable error). A
// backlog push (the initial objects, a replay from the window) is never refused: its size is
// bounded by the cache, not by the client's speed.
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
  // Events a watcher may have waiting while another thread is still pushing to it (its
  // backlog, say); past this it is dropped as too slow, as when its sink refuses a push.
  size_t pending_events = 10000;
  // At start, the store's history of up to this many revisions before the initial list is
  // read into the window, so clients resume across an apiserver restart without relisting.
  int64_t backfill_revisions = 10000;
};

// The apiserver's view of the store, fed by ONE store watch: every object by key, and a
// window of recent events. Lists are served from it at a consistent revision and watches fan
// out from it, so clients never cost the store anything.
class WatchCache {
 public:
  WatchCache(storage::Storage* store, CacheOptions options = {});
  ~WatchCache();

  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Closes every watch (UNAVAILABLE) and ends the feed; idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  int64_t revision() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits (up to timeout) until the cache has seen revision `rv` and handed its events to
  // every watcher (pushed them, unless another thread is still pushing that watcher's).
  absl::Status WaitFor(int64_t rv, std::chrono::milliseconds timeout) ABSL_LOCKS_EXCLUDED(mu_);

  struct ListResult {
    std::vector<EntryPtr> items;
    int64_t revision = 0;
    std::string continue_key;  // empty when complete
    int64_t remaining = 0;
  };
  // Items after `continue_after` (a key) in key order, at most `limit` (0: all).
  ListResult List(const Filter& filter, int64_t limit, const std::string& continue_after) const
      ABSL_LOCKS_EXCLUDED(mu_);
  EntryPtr Get(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);

  // Starts a watch: from_rv 0 sends the current objects as ADDED first; otherwise the events
  // after from_rv, or OUT_OF_RANGE if the window no longer has them. The backlog is pushed on
  // the caller's thread before Watch returns.
  absl::StatusOr<uint64_t> Watch(Filter filter, int64_t from_rv, bool bookmarks,
                                 WatchSinkPtr sink) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends a watch without closing its sink. A batch already being pushed to it may still
  // arrive; nothing after.
  void Unwatch(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  size_t watcher_count() const ABSL_LOCKS_EXCLUDED(mu_);

  // Decodes a stored value (for reads that bypass the cache).
  static absl::StatusOr<EntryPtr> Decode(const std::string& key, const std::string& value,
                                         int64_t revision);

 private:
  // One watch. Its events are handed over under the cache's lock (so every watcher sees them
  // in the order the cache applied them) and pushed outside it by whichever thread holds the
  // watcher's delivery token; the others only append to `due`, which the holder drains.
  struct Watcher {
    Watcher(uint64_t id, Filter filter, bool bookmarks, WatchSinkPtr sink)
        : id(id), filter(std::move(filter)), bookmarks(bookmarks), sink(std::move(sink)) {}
    const uint64_t id;
    const Filter filter;
    const bool bookmarks;
    const WatchSinkPtr sink;

    absl::Mutex mu;  // after the cache's mu_; never held while a sink is called
    // A thread is pushing to the sink and will push `due` too. A new watcher starts with it
    // held by the caller of Watch, which pushes the backlog first.
    bool delivering ABSL_GUARDED_BY(mu) = true;
    std::vector<Event> due ABSL_GUARDED_BY(mu);  // handed over, not yet taken to push
    // Out of the cache's map: nothing more is pushed; the token's holder closes the sink with
    // `close` when it is set (an unwatched sink is not closed).
    bool ended ABSL_GUARDED_BY(mu) = false;
    std::optional<absl::Status> close ABSL_GUARDED_BY(mu);
    // The batch being pushed: only the token's holder touches it. With `due`, swapped back
    // and forth so both keep their capacity.
    std::vector<Event> sending;
  };
  using WatcherPtr = std::shared_ptr<Watcher>;

  // What a replay of the store's history found: its events up to the list's revision, or,
  // when compacted > 0, that the history is kept only from there on.
  struct History {
    std::deque<Event> events;
    int64_t compacted = 0;
  };

  absl::Status Relist() ABSL_LOCKS_EXCLUDED(mu_);
  // Reads the store's history of up to options_.backfill_revisions before list_revision into
  // the window.
  absl::Status Backfill(int64_t list_revision) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<History> ReadHistory(int64_t from, int64_t list_revision) ABSL_LOCKS_EXCLUDED(mu_);
  // A replayed store event as watchers see it; nullopt when it cannot be told (a deletion
  // whose last state is compacted away, an object that does not decode).
  static std::optional<Event> Replayed(const mvccpb::Event& ev);
  // Keys under <prefix>~mkube/ are the apiserver's own bookkeeping, not objects.
  static constexpr char kMarkerPrefix[] = "~mkube/";
  bool IsMarker(const std::string& key) const;
  void Feed() ABSL_LOCKS_EXCLUDED(mu_);
  // Applies the store watch's responses until it ends; true when the store cancelled it for
  // compaction (the cache must relist). `events` and `ready` are the feed's scratch buffers.
  bool Follow(storage::WatchStream& stream, std::vector<Event>* events,
              std::vector<WatcherPtr>* ready) ABSL_LOCKS_EXCLUDED(mu_);
  // Applies one response and hands its events to the watchers, then delivers them.
  void Dispatch(const etcdserverpb::WatchResponse& resp, std::vector<Event>* events,
                std::vector<WatcherPtr>* ready) ABSL_LOCKS_EXCLUDED(mu_);
  void Bookmarks() ABSL_LOCKS_EXCLUDED(mu_);
  // Applies one store event; what watchers are to see of it is appended to `out`.
  void Apply(const mvccpb::Event& ev, int64_t revision, std::vector<Event>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands `events` to every watcher they concern; the watchers whose token this thread took
  // are appended to `ready`, for it to Deliver once the lock is released.
  void HandOver(const std::vector<Event>& events, std::vector<WatcherPtr>* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What became of a watcher that was handed events.
  enum class Offered { kQueued, kTaken, kDropped };
  // After appending to w.due (which held `before` events): takes w's token when it is free
  // (kTaken: deliver w), or ends w when too much waits for the thread pushing to it (kDropped:
  // erase it; that thread closes the sink).
  Offered Offer(Watcher& w, size_t before) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_, w.mu);
  // With w's token held: pushes w.sending, then whatever was handed over meanwhile, until
  // nothing is due (the token is released) or w has ended (its sink is closed if it must be).
  void Deliver(Watcher& w) ABSL_LOCKS_EXCLUDED(mu_, w.mu);
  // Drops every watcher with `why`; those no thread is pushing to are returned, to be closed
  // (Close) once the lock is released; the others are closed by their token's holder.
  std::vector<WatcherPtr> EndAll(const absl::Status& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Close(const std::vector<WatcherPtr>& ended, const absl::Status& why);
  // Drops the oldest revisions while the window is over its count or byte budget.
  void TrimWindow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The event as a watcher with this filter sees it: objects entering its selection are
  // ADDED, objects leaving it DELETED; nullopt when it does not concern the watcher.
  static std::optional<Event> ForWatcher(const Filter& filter, const Event& e);

  storage::Storage* store_;
  CacheOptions options_;

  mutable absl::Mutex mu_;
  std::map<std::string, EntryPtr> objects_ ABSL_GUARDED_BY(mu_);
  std::deque<Event> window_ ABSL_GUARDED_BY(mu_);
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  // Every event up to this revision has been handed over and pushed by the feed (WaitFor).
  int64_t dispatched_ ABSL_GUARDED_BY(mu_) = 0;
  // The oldest revision a watch can resume after.
  int64_t window_start_ ABSL_GUARDED_BY(mu_) = 0;
  size_t window_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // object bytes the window holds
  std::map<uint64_t, WatcherPtr> watchers_ ABSL_GUARDED_BY(mu_);
  std::vector<Event> matched_ ABSL_GUARDED_BY(mu_);  // HandOver's, kept for its capacity
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // The feed's store watch, cancelled by Stop (Cancel only flags it: no call-out). The feed
  // owns it, and clears this before it ends it.
  storage::WatchStream* watch_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread feed_;
  std::thread bookmarks_;
};

}  // namespace mkube::apiserver::cache
