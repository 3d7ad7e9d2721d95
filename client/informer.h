#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "api/object.h"
#include "base/log.h"
#include "client/client.h"
#include "client/clock.h"

namespace mkube::client {

// "namespace/name", or "name" for cluster-scoped objects: the key controllers queue.
inline std::string KeyOf(const google::protobuf::Message& obj) {
  const auto& meta = api::MetaOf(obj);
  return meta.namespace_().empty() ? meta.name() : meta.namespace_() + "/" + meta.name();
}

// Reflector + cache + handlers, as client-go's shared informer: lists, then watches from the
// list's resourceVersion; after a broken stream it resumes from the last version it saw and
// relists only when told that version is too old. The cache holds immutable objects and is
// updated before the handlers run (on the informer's thread).
// What an informer lists and watches.
struct InformerOptions {
  std::string ns;  // empty: every namespace
  std::string label_selector;
  std::string field_selector;
  Clock* clock = RealClock();  // times the back-off after failures
};

template <typename T>
class Informer {
 public:
  using Ptr = std::shared_ptr<const T>;
  struct Handlers {
    std::function<void(const Ptr&)> on_add;
    std::function<void(const Ptr& old_obj, const Ptr& new_obj)> on_update;
    std::function<void(const Ptr&)> on_delete;
  };

  Informer(ApiClient* client, std::string resource, InformerOptions options = {})
      : client_(client), resource_(std::move(resource)), options_(std::move(options)) {}
  ~Informer() { Stop(); }

  // Before Start.
  void AddHandlers(Handlers h) { handlers_.push_back(std::move(h)); }
  // The values an object is filed under in one index (client-go's IndexFunc).
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;
  // Before Start: keeps the cache indexed by `fn`, for ByIndex.
  void AddIndex(const std::string& name, IndexFunc fn) { index_funcs_[name] = std::move(fn); }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      if (watch_) watch_->Cancel();
    }
    if (thread_.joinable()) thread_.join();
  }

  // Waits (real time) until the first list is in the cache.
  bool WaitForCacheSync(std::chrono::milliseconds timeout) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return synced_ || stopping_; };
    mu_.AwaitWithTimeout(absl::Condition(&done), absl::FromChrono(timeout));
    return synced_;
  }
  bool HasSynced() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return synced_;
  }

  Ptr Get(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  std::vector<Ptr> List() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(v);
    return out;
  }
  // The cached objects filed under `value` in the index `name` (added by AddIndex).
  std::vector<Ptr> ByIndex(const std::string& name, const std::string& value) const
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<Ptr> out;
    auto idx = indices_.find(name);
    if (idx == indices_.end()) return out;
    auto keys = idx->second.find(value);
    if (keys == idx->second.end()) return out;
    out.reserve(keys->second.size());
    for (const auto& entry : keys->second) out.push_back(entry.second);
    return out;
  }
  std::string LastSyncResourceVersion() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return resource_version_;
  }
  // How often the informer had to list (1 after a clean start).
  int lists() const { return lists_.load(); }

 private:
  static spdlog::logger& Log() {
    static spdlog::logger& logger = log::Logger("informer");
    return logger;
  }
  bool Stopping() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }
  // Waits 100 ms doubling to 3.2 s, with jitter, on the informer's clock (or until stopped).
  void Backoff(int failures) ABSL_LOCKS_EXCLUDED(mu_) {
    static thread_local std::mt19937 rng(std::random_device{}());
    const int base = std::min(100 << std::min(failures, 5), 3200);
    std::uniform_int_distribution<int> jitter(base / 2, base);
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    options_.clock->AwaitWithTimeout(&mu_, absl::Condition(&stopping),
                                     absl::Milliseconds(jitter(rng)));
  }

  absl::Status ListAll() ABSL_LOCKS_EXCLUDED(mu_) {
    std::map<std::string, Ptr> fresh;
    std::string cont, rv;
    do {
      apiserver::ListRequest req;
      req.set_resource(resource_);
      req.set_namespace_(options_.ns);
      req.set_label_selector(options_.label_selector);
      req.set_field_selector(options_.field_selector);
      req.set_limit(500);
      req.set_continue_(cont);
      auto reply = client_->List(req);
      if (!reply.ok()) return reply.status();
      for (const auto& bytes : reply->items()) {
        auto obj = std::make_shared<T>();
        if (obj->ParseFromString(bytes)) fresh[KeyOf(*obj)] = std::move(obj);
      }
      cont = reply->continue_();
      if (rv.empty()) rv = reply->resource_version();
    } while (!cont.empty());
    ++lists_;
    std::vector<std::function<void()>> calls;
    {
      absl::MutexLock lock(&mu_);
      // (Structured bindings cannot be captured by clang 14's lambdas.)
      for (const auto& entry : fresh) {
        const Ptr& obj = entry.second;
        auto it = items_.find(entry.first);
        if (it == items_.end()) {
          calls.push_back([this, obj] { for (auto& h : handlers_) if (h.on_add) h.on_add(obj); });
        } else if (api::MetaOf(*it->second).resource_version() !=
                   api::MetaOf(*obj).resource_version()) {
          calls.push_back([this, old = it->second, obj] {
            for (auto& h : handlers_) if (h.on_update) h.on_update(old, obj);
          });
        }
      }
      for (const auto& entry : items_) {
        if (!fresh.contains(entry.first)) {
          calls.push_back([this, obj = entry.second] {
            for (auto& h : handlers_) if (h.on_delete) h.on_delete(obj);
          });
        }
      }
      items_ = std::move(fresh);
      indices_.clear();
      for (const auto& entry : items_) Index(entry.first, nullptr, entry.second);
      resource_version_ = rv;
      synced_ = true;
    }
    for (const auto& c : calls) c();
    return absl::OkStatus();
  }

  void Apply(const apiserver::WatchEvent& ev) ABSL_LOCKS_EXCLUDED(mu_) {
    if (ev.type() == "BOOKMARK") {
      absl::MutexLock lock(&mu_);
      resource_version_ = ev.resource_version();
      return;
    }
    auto obj = std::make_shared<T>();
    if (!obj->ParseFromString(ev.object())) return;
    const std::string key = KeyOf(*obj);
    Ptr old;
    {
      absl::MutexLock lock(&mu_);
      auto it = items_.find(key);
      if (it != items_.end()) old = it->second;
      if (ev.type() == "DELETED") {
        Index(key, old.get(), nullptr);
        items_.erase(key);
      } else {
        Index(key, old.get(), obj);
        items_[key] = obj;
      }
      resource_version_ = ev.resource_version();
    }
    for (auto& h : handlers_) {
      if (ev.type() == "DELETED") {
        if (h.on_delete) h.on_delete(obj);
      } else if (old) {
        if (h.on_update) h.on_update(old, obj);
      } else if (h.on_add) {
        h.on_add(obj);
      }
    }
  }

  // Moves `key` in every index from where `before` filed it to where `after` does (either may
  // be null).
  void Index(const std::string& key, const T* before, const Ptr& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [name, fn] : index_funcs_) {
      auto& index = indices_[name];
      if (before) {
        for (const auto& v : fn(*before)) {
          auto it = index.find(v);
          if (it == index.end()) continue;
          it->second.erase(key);
          if (it->second.empty()) index.erase(it);
        }
      }
      if (after) {
        for (const auto& v : fn(*after)) index[v].insert_or_assign(key, after);
      }
    }
  }

  // Opens the next watch (no lock held: it is a call to the apiserver) and makes it the one
  // Stop cancels; null when stopping.
  WatchStream* OpenWatch() ABSL_LOCKS_EXCLUDED(mu_) {
    apiserver::WatchRequest req;
    req.set_resource(resource_);
    req.set_namespace_(options_.ns);
    req.set_label_selector(options_.label_selector);
    req.set_field_selector(options_.field_selector);
    req.set_resource_version(LastSyncResourceVersion());
    req.set_allow_bookmarks(true);
    WatchStreamPtr stream = client_->Watch(req);
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      stream->Cancel();
      return nullptr;
    }
    watch_ = std::move(stream);
    return watch_.get();
  }

  void Run() {
    bool need_list = true;
    int failures = 0;
    while (!Stopping()) {
      if (need_list) {
        if (auto st = ListAll(); !st.ok()) {
          Log().warn("{}: list failed: {}", resource_, st.ToString());
          Backoff(++failures);
          continue;
        }
        need_list = false;
      }
      // Only this thread replaces or resets watch_; Stop only cancels it, under the lock.
      WatchStream* watch = OpenWatch();
      if (!watch) return;
      apiserver::WatchEvent ev;
      bool got_any = false;
      while (watch->Read(&ev)) {
        got_any = true;
        Apply(ev);
      }
      absl::Status st = watch->Finish();
      {
        absl::MutexLock lock(&mu_);
        watch_.reset();
      }
      if (st.code() == absl::StatusCode::kOutOfRange) {
        need_list = true;  // our version is gone from the server's window
        failures = 0;
        continue;
      }
      failures = got_any ? 0 : failures + 1;
      if (!Stopping()) Backoff(failures);
    }
  }

  ApiClient* client_;
  const std::string resource_;
  const InformerOptions options_;
  std::vector<Handlers> handlers_;  // set before Start, then only read
  std::map<std::string, IndexFunc> index_funcs_;  // likewise
  // Index name -> value -> the objects filed under it, by key (the objects themselves, so that
  // ByIndex looks nothing up).
  std::map<std::string, std::map<std::string, std::map<std::string, Ptr>>> indices_
      ABSL_GUARDED_BY(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, Ptr> items_ ABSL_GUARDED_BY(mu_);
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  WatchStreamPtr watch_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> lists_{0};
  std::thread thread_;
};

}  // namespace mkube::client
