#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "apiserver/cache/watch_cache.h"
#include "grpcpp/grpcpp.h"

namespace mkube::apiserver::server {

class StreamSink;

// Where a sink with something to write asks for its next write.
class SinkScheduler {
 public:
  virtual ~SinkScheduler() = default;
  virtual void Schedule(std::shared_ptr<StreamSink> sink) = 0;
};

// The write side of one watch stream. Events queue as encoded slices shared by every watcher
// (bounded: past `limit` live events waiting, Push refuses and the cache cuts the watch off;
// a backlog is let in whole, its size bounded by the cache); one write is in flight at a time
// and carries everything queued when it starts. Writes are started by the watch server's
// thread, never under the cache's lock.
class StreamSink final : public cache::WatchSink, public std::enable_shared_from_this<StreamSink> {
 public:
  // At most this much goes in one message (clients accept 4 MiB by default).
  static constexpr size_t kMaxBatchBytes = 1 << 20;

  // The call a sink writes to: a write's end comes back through WriteDone.
  class Writer {
   public:
    virtual ~Writer() = default;
    virtual void StartWrite(const grpc::ByteBuffer& message) = 0;
    virtual void Finish(const grpc::Status& status) = 0;
  };

  StreamSink(Writer* writer, size_t limit, SinkScheduler* scheduler);

  bool Push(const cache::Event& e, bool backlog) override ABSL_LOCKS_EXCLUDED(mu_);
  void Close(const absl::Status& why) override ABSL_LOCKS_EXCLUDED(mu_);

  // On the watch server's thread: starts a write of everything queued, unless one is in
  // flight (returns how many events it carries), and learns how the last one went.
  size_t Flush() ABSL_LOCKS_EXCLUDED(mu_);
  void WriteDone(bool ok) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  size_t TakeBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Writer* const writer_;  // outlives every use: the call ends only after Finish completes
  const size_t limit_;
  SinkScheduler* const scheduler_;
  absl::Mutex mu_;
  std::deque<grpc::Slice> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<grpc::Slice> batch_ ABSL_GUARDED_BY(mu_);
  // The write in flight: filled under mu_ by the thread that set writing_, which then starts
  // the write with it outside the lock; nobody touches it again until WriteDone.
  grpc::ByteBuffer buffer_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool scheduled_ ABSL_GUARDED_BY(mu_) = false;  // waiting in the server's next round
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_) = grpc::Status::OK;
};

// Serves a service's Watch calls on completion queues of their own, each polled by one
// thread (a lane): a lane accepts calls, starts their writes in rounds, and sees every write,
// end and cancellation complete. Once the rounds of the last `interval` have sent
// kQuickEvents events (counted once per stream that carries them), the next waits until
// `interval` has passed (0: no wait). A busy lane, whether busy with many watches or with
// many events, so gathers its events into fewer, larger messages (each message costs both
// ends far more than the bytes in it) while a quiet one sends each event at once; and
// nothing is handed between threads per message: a lane starts its writes and reads their
// completions itself.
class WatchServer {
 public:
  static constexpr size_t kQuickEvents = 32;

  struct Handlers {
    // Asks gRPC for the next Watch call (the service's RequestWatch).
    std::function<void(grpc::ServerContext*, grpc::ByteBuffer*,
                       grpc::ServerAsyncWriter<grpc::ByteBuffer>*, grpc::ServerCompletionQueue*,
                       void*)>
        request;
    // Checks a new call's request (consuming it) and registers its sink; the watch's id,
    // or why not.
    std::function<absl::StatusOr<uint64_t>(grpc::ServerContext*, grpc::ByteBuffer*,
                                           cache::WatchSinkPtr)>
        start;
    // Unregisters a watch whose call is over.
    std::function<void(uint64_t)> stop;
  };

  WatchServer(std::chrono::milliseconds interval, size_t queue_limit, Handlers handlers);
  // After the gRPC server has shut down: waits until every call has ended, then ends the
  // queues and their threads.
  ~WatchServer();

  // Once the gRPC server has started: serves calls from `cqs` (the server's), a lane each.
  void Start(std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> cqs);

 private:
  class Call;
  class Lane;

  const std::chrono::milliseconds interval_;
  const size_t queue_limit_;
  const Handlers handlers_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;  // alive, requested ones included
};

}  // namespace mkube::apiserver::server
