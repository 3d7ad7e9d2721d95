#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "apiserver/cache/watch_cache.h"
#include "grpcpp/grpcpp.h"

namespace mkube::apiserver::server {

class WatchFlusher;

// The write side of one watch stream. Events queue as encoded slices shared by every watcher
// (bounded: a watch that falls too far behind is cut off); one write is in flight at a time
// and carries everything queued when it starts. Writes are started by the flusher, never
// under the cache's lock.
class StreamSink final : public cache::WatchSink, public std::enable_shared_from_this<StreamSink> {
 public:
  // At most this much goes in one message (clients accept 4 MiB by default).
  static constexpr size_t kMaxBatchBytes = 1 << 20;

  StreamSink(grpc::ServerWriteReactor<grpc::ByteBuffer>* reactor, size_t limit,
             WatchFlusher* flusher);

  bool Push(const cache::Event& e, bool backlog) override;
  void Close(const absl::Status& why) override;

  // Called by the flusher: starts a write of everything queued, unless one is in flight.
  void Flush();
  void WriteDone(bool ok);

 private:
  void TakeBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  grpc::ServerWriteReactor<grpc::ByteBuffer>* const reactor_;
  const size_t limit_;
  WatchFlusher* const flusher_;
  std::mutex mu_;
  std::deque<grpc::Slice> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<grpc::Slice> batch_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer buffer_;  // the write in flight
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool scheduled_ ABSL_GUARDED_BY(mu_) = false;  // waiting in the flusher's next round
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_) = grpc::Status::OK;
};

// Starts the writes of every watch stream with something queued, in rounds at most one
// `interval` apart (0: as soon as there is work). A busy stream so gathers its events into
// fewer, larger messages: each message costs both ends far more than the bytes in it.
class WatchFlusher {
 public:
  explicit WatchFlusher(std::chrono::milliseconds interval);
  ~WatchFlusher();
  void Schedule(std::shared_ptr<StreamSink> sink);

 private:
  void Loop();

  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<StreamSink>> due_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// One Watch call: registers a StreamSink with the registry's watch cache, unregisters it
// when the call ends.
template <typename Registry>
class WatchReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  WatchReactor(Registry* registry, size_t limit, WatchFlusher* flusher)
      : registry_(registry), sink_(std::make_shared<StreamSink>(this, limit, flusher)) {}

  template <typename Request>
  void Start(const Request& req) {
    auto id = registry_->Watch(req, sink_);
    if (!id.ok()) {
      sink_->Close(id.status());
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    id_ = *id;
  }
  void Fail(const absl::Status& st) { sink_->Close(st); }

  void OnWriteDone(bool ok) override { sink_->WriteDone(ok); }
  void OnCancel() override {
    Unwatch();
    sink_->Close(absl::CancelledError("watch canceled"));
  }
  void OnDone() override {
    Unwatch();
    delete this;
  }

 private:
  void Unwatch() {
    uint64_t id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = std::exchange(id_, 0);
    }
    if (id) registry_->Unwatch(id);
  }
  Registry* registry_;
  std::shared_ptr<StreamSink> sink_;
  std::mutex mu_;
  uint64_t id_ = 0;
};

}  // namespace mkube::apiserver::server
