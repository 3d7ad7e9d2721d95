#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "proto/etcd/rpc.pb.h"
#include "store/mvcc/key_range.h"
#include "store/mvcc/kv_store.h"

namespace mkube::store::watch {

// A response of events whose events are already in wire form: each one a WatchResponse
// `events` field (tag and length included), encoded once and shared by every watcher that
// gets it, so a response is these bytes after its header and watch id.
struct EncodedEvents {
  int64_t watch_id = 0;
  etcdserverpb::ResponseHeader header;
  std::vector<std::shared_ptr<const std::string>> events;
  size_t bytes = 0;  // of the events together
};

// Where the responses of one Watch stream go.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // Queues a response without blocking. Returns false, queueing nothing, when the stream's
  // buffer is over its limit; `force` (control messages) always queues.
  virtual bool Send(etcdserverpb::WatchResponse&& resp, bool force) = 0;
  // Queues a response of events, as Send does. By default it is decoded and Sent; a sink
  // that writes bytes takes the events as they are.
  virtual bool SendEvents(EncodedEvents&& events, bool force);
  // Whether a refused stream has drained enough to be offered more.
  virtual bool HasRoom() const = 0;
};
using WatchSinkPtr = std::shared_ptr<WatchSink>;

struct WatchSpec {
  std::string key;
  std::string range_end;
  bool prev_kv = false;
  bool progress_notify = false;
  bool no_put = false;
  bool no_delete = false;
};

struct HubOptions {
  // Interval of progress notifications to watchers that asked for them.
  std::chrono::milliseconds progress_interval = std::chrono::minutes(10);
  // Events read from history per step when a watcher catches up.
  size_t catchup_batch = 1000;
  // Events one response holds at most (a revision is never split).
  size_t max_events_per_response = 1000;
  // Watcher additions waiting for the hub thread at most; Add refuses beyond.
  size_t max_pending_adds = 1 << 16;
};

// Fans committed events out to every watcher from one thread. A watcher is synced when it
// has everything up to the hub's revision: it gets new events as they commit. A watcher whose
// stream refuses (full) becomes unsynced and catches up from the store's history when its
// stream has room, so a slow watcher costs bounded memory and never delays anyone else.
class WatchHub : public mvcc::CommitListener {
 public:
  WatchHub(mvcc::KvStore* store, HubOptions options);
  ~WatchHub() override;

  void Start();
  void Stop();

  // Adds a watcher whose first wanted revision is next_rev. The created response must
  // already be queued on the sink: every later response for it comes from the hub. Returns
  // false, adding nothing, when max_pending_adds additions already wait for the hub thread:
  // the caller cancels the watch ("too many requests").
  bool Add(const WatchSinkPtr& sink, int64_t watch_id, WatchSpec spec, int64_t next_rev)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Removes a watcher; the hub queues its canceled response. Call it only for a watcher that
  // was added (so cancels waiting are bounded by the additions).
  void Cancel(const WatchSinkPtr& sink, int64_t watch_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets every watcher of a closed stream.
  void RemoveSink(const WatchSink* sink) ABSL_LOCKS_EXCLUDED(mu_);
  // Queues {watch_id:-1, header.revision} once every watcher of the sink is synced. Requests
  // of one sink not yet answered are answered together, by one response (as etcd does).
  void RequestProgress(const WatchSinkPtr& sink) ABSL_LOCKS_EXCLUDED(mu_);
  // A sink that refused a response has room again.
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);

  void OnPublished(int64_t revision) override ABSL_LOCKS_EXCLUDED(mu_);

  size_t watcher_count() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Watcher {
    WatchSinkPtr sink;
    int64_t id = 0;
    WatchSpec spec;
    mvcc::KeyRange range{"", ""};
    int64_t next_rev = 0;
    bool synced = false;
  };
  struct Command {
    enum Kind { kAdd, kCancel, kRemoveSink, kProgress } kind;
    WatchSinkPtr sink;
    const WatchSink* raw = nullptr;
    int64_t watch_id = 0;
    WatchSpec spec;
    int64_t next_rev = 0;
  };
  using Key = std::pair<const WatchSink*, int64_t>;

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  void Apply(Command& cmd) ABSL_LOCKS_EXCLUDED(mu_);
  void FanOut(int64_t target);
  void CatchUp() ABSL_LOCKS_EXCLUDED(mu_);
  void SendProgress();
  class EventWire;
  // Sends w the events of `events` it wants; false when its sink refused.
  bool Deliver(Watcher& w, const std::vector<mvccpb::Event>& events, EventWire& wire,
               int64_t header_rev);
  etcdserverpb::ResponseHeader Header(int64_t revision) const;
  etcdserverpb::WatchResponse NewResponse(int64_t watch_id, int64_t revision) const;

  mvcc::KvStore* store_;
  HubOptions options_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  // Commands toward the hub thread, taken whole each round. Bounded: additions by
  // options_.max_pending_adds (Add refuses beyond), cancels by the additions, sink removals by
  // the open streams, progress requests to one per sink (progress_asked_).
  std::vector<Command> inbox_ ABSL_GUARDED_BY(mu_);
  size_t inbox_adds_ ABSL_GUARDED_BY(mu_) = 0;
  // Sinks with a progress request in inbox_: a second one joins the first.
  std::unordered_set<const WatchSink*> progress_asked_ ABSL_GUARDED_BY(mu_);
  int64_t committed_ ABSL_GUARDED_BY(mu_) = 0;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  size_t count_ ABSL_GUARDED_BY(mu_) = 0;

  // Hub-thread state: only the hub thread touches these (the constructor and Start before it
  // runs), so they carry no lock.
  int64_t hub_rev_ = 0;
  std::map<Key, Watcher> watchers_;
  // Sinks whose progress request waits for all their watchers to be synced: one entry each.
  std::map<const WatchSink*, WatchSinkPtr> progress_waiting_;
  std::chrono::steady_clock::time_point next_progress_;
  std::thread thread_;
};

}  // namespace mkube::store::watch
