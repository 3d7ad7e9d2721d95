#include "apiserver/cache/watch_cache.h"

#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "api/object.h"
#include "apiserver/storage/requests.h"
#include "base/log.h"
#include "fmt/format.h"
#include "proto/api/meta.pb.h"

namespace mkube::apiserver::cache {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("cache");
  return logger;
}

}  // namespace

const char* EventTypeName(EventType t) {
  switch (t) {
    case EventType::kAdded: return "ADDED";
    case EventType::kModified: return "MODIFIED";
    case EventType::kDeleted: return "DELETED";
    case EventType::kBookmark: return "BOOKMARK";
  }
  return "";
}

bool Filter::Matches(const Entry& e) const {
  if (kind && e.kind != kind) return false;
  if (!ns.empty() && e.ns != ns) return false;
  if (!labels.empty() && !labels.Matches(api::MetaOf(*e.object).labels())) return false;
  if (!fields.empty() && !fields.Matches(*e.object)) return false;
  return true;
}

WatchCache::WatchCache(storage::Storage* store, CacheOptions options)
    : store_(store), options_(std::move(options)) {}

WatchCache::~WatchCache() { Stop(); }

absl::StatusOr<EntryPtr> WatchCache::Decode(const std::string& key, const std::string& value,
                                            int64_t revision) {
  // /registry/<resource>/[<namespace>/]<name>
  std::vector<std::string> parts = absl::StrSplit(key, '/');
  if (parts.size() < 4 || parts[1] != "registry") {
    return absl::InvalidArgumentError(fmt::format("unexpected key {}", key));
  }
  const api::KindInfo* kind = api::FindResource(parts[2]);
  if (!kind) return absl::InvalidArgumentError(fmt::format("unknown resource in key {}", key));
  auto entry = std::make_shared<Entry>();
  entry->key = key;
  entry->kind = kind;
  if (kind->namespaced) {
    if (parts.size() != 5) return absl::InvalidArgumentError(fmt::format("bad key {}", key));
    entry->ns = parts[3];
    entry->name = parts[4];
  } else {
    if (parts.size() != 4) return absl::InvalidArgumentError(fmt::format("bad key {}", key));
    entry->name = parts[3];
  }
  entry->revision = revision;
  std::unique_ptr<google::protobuf::Message> obj = kind->New();
  if (!obj->ParseFromString(value)) {
    return absl::DataLossError(fmt::format("cannot decode the object stored at {}", key));
  }
  api::MutableMetaOf(obj.get())->set_resource_version(std::to_string(revision));
  entry->bytes = obj->SerializeAsString();
  entry->object = std::move(obj);
  return EntryPtr(std::move(entry));
}

absl::Status WatchCache::Start() {
  if (auto st = Relist(); !st.ok()) return st;
  if (auto st = Backfill(revision()); !st.ok()) {
    Log().warn("no history before revision {}: {}", revision(), st.ToString());
  }
  feed_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "cache-feed");
    Feed();
  });
  bookmarks_ = std::thread([this] { Bookmarks(); });
  return absl::OkStatus();
}

void WatchCache::Stop() {
  const absl::Status why = absl::UnavailableError("apiserver shutting down");
  std::vector<WatcherPtr> ended;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;  // wakes WaitFor and the bookmark thread
    if (watch_) watch_->Cancel();
    ended = EndAll(why);
  }
  Close(ended, why);
  if (feed_.joinable()) feed_.join();
  if (bookmarks_.joinable()) bookmarks_.join();
}

absl::Status WatchCache::Relist() {
  auto list = store_->List(options_.prefix);
  if (!list.ok()) return list.status();
  std::map<std::string, EntryPtr> objects;
  for (const auto& kv : list->kvs()) {
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
  const int64_t revision = list->header().revision();
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
    storage::WatchStreamPtr stream = store_->Watch(
        storage::PrefixWatch(options_.prefix, from, /*prev_kv=*/true), absl::Seconds(30));
    // A marker written once the watch exists: when its event arrives, every earlier one has.
    // (etcd 3.4 answers progress requests before a replay is done, so they cannot tell.)
    const std::string marker = options_.prefix + kMarkerPrefix + "backfill/" + api::NewUid();
    std::deque<Event> events;
    bool complete = false, compacted = false;
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
        compacted = resp.compact_revision() > 0;
        if (compacted) from = resp.compact_revision();
        break;
      }
      for (const auto& ev : resp.events()) {
        const int64_t rev = ev.kv().mod_revision();
        if (ev.kv().key() == marker) {
          complete = true;
          break;
        }
        if (rev > list_revision || IsMarker(ev.kv().key())) continue;
        const bool put = ev.type() == mvccpb::Event::PUT;
        if (!put && !ev.has_prev_kv()) continue;  // its last state is compacted away
        auto e = Decode(ev.kv().key(), put ? ev.kv().value() : ev.prev_kv().value(), rev);
        if (!e.ok()) continue;
        const EventType type = !put ? EventType::kDeleted
                                    : ev.has_prev_kv() ? EventType::kModified : EventType::kAdded;
        EntryPtr prev;
        if (type == EventType::kModified) {
          if (auto p = Decode(ev.prev_kv().key(), ev.prev_kv().value(), ev.prev_kv().mod_revision()); p.ok()) {
            prev = *p;
          }
        }
        events.push_back(Event{type, *e, rev, std::move(prev)});
      }
    }
    stream.reset();  // ends the watch
    store_->Txn(storage::DeleteKeyTxn(marker)).IgnoreError();
    if (compacted) continue;
    if (!complete) return absl::UnavailableError("store history ended early");
    absl::MutexLock lock(&mu_);
    if (revision_ != list_revision) return absl::OkStatus();  // relisted meanwhile
    window_ = std::move(events);
    window_start_ = from - 1;
    window_bytes_ = 0;
    for (const auto& e : window_) window_bytes_ += e.entry->bytes.size();
    TrimWindow();
    Log().info("window holds {} events from revision {}", window_.size(), from);
    return absl::OkStatus();
  }
  return absl::OkStatus();
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
    etcdserverpb::WatchResponse resp;
    while (stream->Read(&resp)) {
      if (resp.created()) continue;
      if (resp.canceled()) {
        Log().warn("store watch canceled (compact revision {}): relisting",
                   resp.compact_revision());
        relist = resp.compact_revision() > 0;
        const absl::Status why =
            absl::OutOfRangeError("too old resource version: the cache relists");
        std::vector<WatcherPtr> ended;
        {
          absl::MutexLock lock(&mu_);
          ended = EndAll(why);
        }
        Close(ended, why);
        break;
      }
      int64_t revision;
      {
        absl::MutexLock lock(&mu_);
        for (const auto& ev : resp.events()) Apply(ev, ev.kv().mod_revision(), &events);
        if (resp.events().empty() && resp.header().revision() > revision_) {
          // A progress notification: everything up to it has been delivered.
          revision_ = resp.header().revision();
        }
        // Handed over in the same hold of the lock as applied: a watch registered before
        // gets every event of this response, one registered after has them in its backlog.
        if (!events.empty()) HandOver(events, &ready);
        events.clear();
        revision = revision_;
        if (ready.empty()) dispatched_ = revision_;
      }
      if (ready.empty()) continue;
      for (const WatcherPtr& w : ready) Deliver(*w);
      ready.clear();
      absl::MutexLock lock(&mu_);
      dispatched_ = std::max(dispatched_, revision);
    }
    {
      absl::MutexLock lock(&mu_);
      watch_ = nullptr;
      if (stopping_) return;
    }
    stream.reset();
    if (!relist) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
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

int64_t WatchCache::revision() const {
  absl::MutexLock lock(&mu_);
  return revision_;
}

absl::Status WatchCache::WaitFor(int64_t rv, std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  const auto reached = [this, rv]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || dispatched_ >= rv;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&reached), absl::FromChrono(timeout))) {
    return absl::DeadlineExceededError(fmt::format(
        "Timeout: too large resource version: {}, current: {}", rv, revision_));
  }
  return absl::OkStatus();
}

WatchCache::ListResult WatchCache::List(const Filter& filter, int64_t limit,
                                        const std::string& continue_after) const {
  ListResult out;
  absl::MutexLock lock(&mu_);
  out.revision = revision_;
  // Keys sort by resource, then namespace, then name: start at the narrowest prefix.
  std::string prefix = options_.prefix;
  if (filter.kind) {
    prefix += filter.kind->resource + "/";
    if (!filter.ns.empty() && filter.kind->namespaced) prefix += filter.ns + "/";
  }
  auto it = continue_after.empty() ? objects_.lower_bound(prefix)
                                   : objects_.upper_bound(continue_after);
  for (; it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (!filter.Matches(*it->second)) continue;
    if (limit > 0 && static_cast<int64_t>(out.items.size()) == limit) {
      out.continue_key = out.items.back()->key;
      for (; it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
        if (filter.Matches(*it->second)) ++out.remaining;
      }
      break;
    }
    out.items.push_back(it->second);
  }
  return out;
}

EntryPtr WatchCache::Get(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : it->second;
}

}  // namespace mkube::apiserver::cache
