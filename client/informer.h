#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "api/object.h"
#include "client/client.h"
#include "spdlog/spdlog.h"

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
template <typename T>
class Informer {
 public:
  using Ptr = std::shared_ptr<const T>;
  struct Handlers {
    std::function<void(const Ptr&)> on_add;
    std::function<void(const Ptr& old_obj, const Ptr& new_obj)> on_update;
    std::function<void(const Ptr&)> on_delete;
  };

  Informer(ApiClient* client, std::string resource, std::string ns = "",
           std::string label_selector = "", std::string field_selector = "")
      : client_(client),
        resource_(std::move(resource)),
        ns_(std::move(ns)),
        labels_(std::move(label_selector)),
        fields_(std::move(field_selector)) {}
  ~Informer() { Stop(); }

  // Before Start.
  void AddHandlers(Handlers h) { handlers_.push_back(std::move(h)); }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      if (watch_) watch_->Cancel();
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  bool WaitForCacheSync(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return synced_ || stopping_; }) && synced_;
  }

  Ptr Get(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  std::vector<Ptr> List() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(v);
    return out;
  }
  std::string LastSyncResourceVersion() const {
    std::lock_guard<std::mutex> lock(mu_);
    return resource_version_;
  }
  // How often the informer had to list (1 after a clean start).
  int lists() const { return lists_.load(); }

 private:
  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }
  void Backoff(int failures) {
    static thread_local std::mt19937 rng(std::random_device{}());
    const int base = std::min(100 << std::min(failures, 5), 3200);
    std::uniform_int_distribution<int> jitter(base / 2, base);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(jitter(rng)), [&] { return stopping_; });
  }

  absl::Status ListAll() {
    std::map<std::string, Ptr> fresh;
    std::string cont, rv;
    do {
      apiserver::ListRequest req;
      req.set_resource(resource_);
      req.set_namespace_(ns_);
      req.set_label_selector(labels_);
      req.set_field_selector(fields_);
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
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [key, obj] : fresh) {
        auto it = items_.find(key);
        if (it == items_.end()) {
          calls.push_back([this, obj] { for (auto& h : handlers_) if (h.on_add) h.on_add(obj); });
        } else if (api::MetaOf(*it->second).resource_version() !=
                   api::MetaOf(*obj).resource_version()) {
          calls.push_back([this, old = it->second, obj] {
            for (auto& h : handlers_) if (h.on_update) h.on_update(old, obj);
          });
        }
      }
      for (const auto& [key, obj] : items_) {
        if (!fresh.contains(key)) {
          calls.push_back([this, obj] { for (auto& h : handlers_) if (h.on_delete) h.on_delete(obj); });
        }
      }
      items_ = std::move(fresh);
      resource_version_ = rv;
      synced_ = true;
    }
    cv_.notify_all();
    for (auto& c : calls) c();
    return absl::OkStatus();
  }

  void Apply(const apiserver::WatchEvent& ev) {
    if (ev.type() == "BOOKMARK") {
      std::lock_guard<std::mutex> lock(mu_);
      resource_version_ = ev.resource_version();
      return;
    }
    auto obj = std::make_shared<T>();
    if (!obj->ParseFromString(ev.object())) return;
    const std::string key = KeyOf(*obj);
    Ptr old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = items_.find(key);
      if (it != items_.end()) old = it->second;
      if (ev.type() == "DELETED") {
        items_.erase(key);
      } else {
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

  void Run() {
    bool need_list = true;
    int failures = 0;
    while (!Stopping()) {
      if (need_list) {
        if (auto st = ListAll(); !st.ok()) {
          spdlog::warn("informer {}: list failed: {}", resource_, st.ToString());
          Backoff(++failures);
          continue;
        }
        need_list = false;
      }
      apiserver::WatchRequest req;
      req.set_resource(resource_);
      req.set_namespace_(ns_);
      req.set_label_selector(labels_);
      req.set_field_selector(fields_);
      req.set_resource_version(LastSyncResourceVersion());
      req.set_allow_bookmarks(true);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        watch_ = client_->Watch(req);
      }
      apiserver::WatchEvent ev;
      bool got_any = false;
      while (watch_->Read(&ev)) {
        got_any = true;
        Apply(ev);
      }
      absl::Status st = watch_->Finish();
      {
        std::lock_guard<std::mutex> lock(mu_);
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
  const std::string resource_, ns_, labels_, fields_;
  std::vector<Handlers> handlers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Ptr> items_ ABSL_GUARDED_BY(mu_);
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<ApiClient::WatchStream> watch_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> lists_{0};
  std::thread thread_;
};

}  // namespace mkube::client
