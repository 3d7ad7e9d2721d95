#include "apiserver/cache/watch_cache.h"

#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "api/object.h"
#include "base/log.h"
#include "base/status.h"
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
  MKUBE_RETURN_IF_ERROR(Relist());
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
