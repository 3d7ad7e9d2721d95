// The cache's side towards the store: the initial list, the replay of the history before it
// into the window, and the one store watch that feeds the cache from then on.
#include <thread>

#include "api/object.h"
#include "apiserver/cache/watch_cache.h"
#include "apiserver/storage/requests.h"
#include "base/log.h"
#include "base/status.h"

namespace mkube::apiserver::cache {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("cache");
  return logger;
}

}  // namespace

absl::Status WatchCache::Relist() {
  MKUBE_ASSIGN_OR_RETURN(auto list, store_->List(options_.prefix));
  std::map<std::string, EntryPtr> objects;
  for (const auto& kv : list.kvs()) {
    if (IsMarker(kv.key())) continue;
    auto e = Decode(kv.key(), kv.value(), kv.mod_revision());
    if (!e.ok()) {
      Log().warn("skipping {} at revision {}: {}", kv.key(), kv.mod_revision(),
                 e.status().ToString());
      continue;
    }
    objects[kv.key()] = *e;
  }
  // A watch started since the store watch failed saw the old objects and window: the events
  // between those and this list will never reach it.
  const absl::Status why = absl::OutOfRangeError("too old resource version: the cache relists");
  const size_t count = objects.size();
  const int64_t revision = list.header().revision();
  std::vector<WatcherPtr> ended;
  {
    absl::MutexLock lock(&mu_);
    ended = EndAll(why);
    objects_ = std::move(objects);
    window_.clear();
    window_bytes_ = 0;
    revision_ = revision;
    dispatched_ = revision;
    window_start_ = revision;
  }
  Close(ended, why);
  Log().info("listed {} objects at revision {}", count, revision);
  return absl::OkStatus();
}

absl::Status WatchCache::Backfill(int64_t list_revision) {
  int64_t from = std::max<int64_t>(2, list_revision - options_.backfill_revisions + 1);
  for (int attempt = 0; attempt < 2 && from <= list_revision; ++attempt) {
    MKUBE_ASSIGN_OR_RETURN(auto history, ReadHistory(from, list_revision));
    if (history.compacted > 0) {
      from = history.compacted;
      continue;
    }
    absl::MutexLock lock(&mu_);
    if (revision_ != list_revision) return absl::OkStatus();  // relisted meanwhile
    window_ = std::move(history.events);
    window_start_ = from - 1;
    window_bytes_ = 0;
    for (const auto& e : window_) window_bytes_ += e.entry->bytes.size();
    TrimWindow();
    Log().info("window holds {} events from revision {}", window_.size(), from);
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::StatusOr<WatchCache::History> WatchCache::ReadHistory(int64_t from, int64_t list_revision) {
  storage::WatchStreamPtr stream = store_->Watch(
      storage::PrefixWatch(options_.prefix, from, /*prev_kv=*/true), absl::Seconds(30));
  // A marker written once the watch exists: when its event arrives, every earlier one has.
  // (etcd 3.4 answers progress requests before a replay is done, so they cannot tell.)
  const std::string marker = options_.prefix + kMarkerPrefix + "backfill/" + api::NewUid();
  History history;
  bool complete = false;
  etcdserverpb::WatchResponse resp;
  while (!complete && stream->Read(&resp)) {
    if (resp.created()) {
      auto put = store_->Txn(storage::PutTxn(marker, std::to_string(list_revision)));
      if (!put.ok()) {
        return absl::UnavailableError("cannot write the backfill marker: " +
                                      std::string(put.status().message()));
      }
      continue;
    }
    if (resp.canceled()) {
      history.compacted = resp.compact_revision();
      break;
    }
    for (const auto& ev : resp.events()) {
      if (ev.kv().key() == marker) {
        complete = true;
        break;
      }
      if (ev.kv().mod_revision() > list_revision || IsMarker(ev.kv().key())) continue;
      if (std::optional<Event> e = Replayed(ev)) history.events.push_back(*std::move(e));
    }
  }
  stream.reset();  // ends the watch
  store_->Txn(storage::DeleteKeyTxn(marker)).IgnoreError();
  if (!complete && history.compacted == 0) {
    return absl::UnavailableError("store history ended early");
  }
  return history;
}

std::optional<Event> WatchCache::Replayed(const mvccpb::Event& ev) {
  const int64_t rev = ev.kv().mod_revision();
  const bool put = ev.type() == mvccpb::Event::PUT;
  if (!put && !ev.has_prev_kv()) return std::nullopt;  // its last state is compacted away
  auto e = Decode(ev.kv().key(), put ? ev.kv().value() : ev.prev_kv().value(), rev);
  if (!e.ok()) return std::nullopt;
  const EventType type = !put ? EventType::kDeleted
                              : ev.has_prev_kv() ? EventType::kModified : EventType::kAdded;
  EntryPtr prev;
  if (type == EventType::kModified) {
    if (auto p = Decode(ev.prev_kv().key(), ev.prev_kv().value(), ev.prev_kv().mod_revision());
        p.ok()) {
      prev = *p;
    }
  }
  return Event{type, *e, rev, std::move(prev)};
}

void WatchCache::Feed() {
  // Reused from one store response to the next.
  std::vector<Event> events;
  std::vector<WatcherPtr> ready;
  bool relist = false;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (relist) {
      if (auto st = Relist(); !st.ok()) {
        Log().warn("relist failed: {}", st.ToString());
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        continue;
      }
      relist = false;
    }
    storage::WatchStreamPtr stream =
        store_->Watch(storage::PrefixWatch(options_.prefix, revision() + 1, /*prev_kv=*/false));
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      watch_ = stream.get();
    }
    relist = Follow(*stream, &events, &ready);
    {
      absl::MutexLock lock(&mu_);
      watch_ = nullptr;
      if (stopping_) return;
    }
    stream.reset();
    if (!relist) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

bool WatchCache::Follow(storage::WatchStream& stream, std::vector<Event>* events,
                        std::vector<WatcherPtr>* ready) {
  etcdserverpb::WatchResponse resp;
  while (stream.Read(&resp)) {
    if (resp.created()) continue;
    if (resp.canceled()) {
      Log().warn("store watch canceled (compact revision {}): relisting", resp.compact_revision());
      const absl::Status why = absl::OutOfRangeError("too old resource version: the cache relists");
      std::vector<WatcherPtr> ended;
      {
        absl::MutexLock lock(&mu_);
        ended = EndAll(why);
      }
      Close(ended, why);
      return resp.compact_revision() > 0;
    }
    Dispatch(resp, events, ready);
  }
  return false;
}

void WatchCache::Dispatch(const etcdserverpb::WatchResponse& resp, std::vector<Event>* events,
                          std::vector<WatcherPtr>* ready) {
  int64_t revision;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& ev : resp.events()) Apply(ev, ev.kv().mod_revision(), events);
    if (resp.events().empty() && resp.header().revision() > revision_) {
      // A progress notification: everything up to it has been delivered.
      revision_ = resp.header().revision();
    }
    // Handed over in the same hold of the lock as applied: a watch registered before
    // gets every event of this response, one registered after has them in its backlog.
    if (!events->empty()) HandOver(*events, ready);
    events->clear();
    revision = revision_;
    if (ready->empty()) dispatched_ = revision_;
  }
  if (ready->empty()) return;
  for (const WatcherPtr& w : *ready) Deliver(*w);
  ready->clear();
  absl::MutexLock lock(&mu_);
  dispatched_ = std::max(dispatched_, revision);
}

bool WatchCache::IsMarker(const std::string& key) const {
  return key.compare(options_.prefix.size(), sizeof(kMarkerPrefix) - 1, kMarkerPrefix) == 0;
}

void WatchCache::Apply(const mvccpb::Event& ev, int64_t revision, std::vector<Event>* out_events) {
  const std::string& key = ev.kv().key();
  // Whatever the key, the cache has now seen this revision.
  revision_ = std::max(revision_, revision);
  if (IsMarker(key)) return;
  auto it = objects_.find(key);
  EntryPtr prev = it == objects_.end() ? nullptr : it->second;
  Event out{EventType::kAdded, nullptr, revision, nullptr};
  if (ev.type() == mvccpb::Event::PUT) {
    auto e = Decode(key, ev.kv().value(), revision);
    if (!e.ok()) {
      Log().warn("skipping {} at revision {}: {}", key, revision, e.status().ToString());
      return;
    }
    objects_[key] = *e;
    out.type = prev ? EventType::kModified : EventType::kAdded;
    out.entry = *e;
    out.prev = prev;
  } else {
    if (!prev) return;
    objects_.erase(it);
    // The last state, at the revision of its deletion.
    auto gone = std::make_shared<Entry>(*prev);
    auto obj = std::unique_ptr<google::protobuf::Message>(prev->object->New());
    obj->CopyFrom(*prev->object);
    api::MutableMetaOf(obj.get())->set_resource_version(std::to_string(revision));
    gone->revision = revision;
    gone->bytes = obj->SerializeAsString();
    gone->object = std::move(obj);
    out.type = EventType::kDeleted;
    out.entry = std::move(gone);
  }
  window_.push_back(out);
  window_bytes_ += out.entry->bytes.size();
  TrimWindow();
  out_events->push_back(std::move(out));
}

void WatchCache::TrimWindow() {
  while (window_.size() > options_.window_events || window_bytes_ > options_.window_bytes) {
    const int64_t r = window_.front().revision;
    while (!window_.empty() && window_.front().revision == r) {
      window_bytes_ -= window_.front().entry->bytes.size();
      window_.pop_front();
    }
    window_start_ = r;
  }
}

}  // namespace mkube::apiserver::cache
