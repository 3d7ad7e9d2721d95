#include "apiserver/server/watch_stream.h"

#include <algorithm>
#include <cstring>

#include "grpcpp/alarm.h"
#include "grpcpp/support/async_stream.h"
#include "proto/apiserver/apiserver.pb.h"
#include "proto/grpc_status.h"

namespace mkube::apiserver::server {
namespace {

// An event as it travels inside a WatchBatch: the field's tag and length, then the
// WatchEvent. A message is these slices one after another, so a write copies nothing.
grpc::Slice EncodeEvent(const cache::Event& e) {
  WatchEvent out;
  out.set_type(cache::EventTypeName(e.type));
  out.set_resource_version(std::to_string(e.revision));
  if (e.entry) out.set_object(e.entry->bytes);
  const size_t body = out.ByteSizeLong();
  uint8_t head[1 + 10];
  head[0] = 0x0a;  // field 1, length-delimited
  size_t n = 1;
  for (size_t v = body;; v >>= 7) {
    head[n++] = static_cast<uint8_t>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  grpc_slice slice = grpc_slice_malloc(n + body);
  uint8_t* p = GRPC_SLICE_START_PTR(slice);
  std::memcpy(p, head, n);
  out.SerializeWithCachedSizesToArray(p + n);
  return grpc::Slice(slice, grpc::Slice::STEAL_REF);
}

struct EncodedEvent final : cache::EncodingMemo::Encoding {
  explicit EncodedEvent(grpc::Slice s) : slice(std::move(s)) {}
  const grpc::Slice slice;
};

// The entry's encoding for this event type, made once for all watchers (the memo is safe
// for sinks pushed to from several threads at once).
grpc::Slice Encoded(const cache::Event& e) {
  if (!e.entry || e.type == cache::EventType::kBookmark) return EncodeEvent(e);
  const auto& encoded = e.entry->encoded.GetOrMake(
      cache::Encoder::kGrpc, e.type, [&] { return std::make_unique<EncodedEvent>(EncodeEvent(e)); });
  return static_cast<const EncodedEvent&>(encoded).slice;
}

}  // namespace

StreamSink::StreamSink(Writer* writer, size_t limit, SinkScheduler* scheduler)
    : writer_(writer), limit_(limit), scheduler_(scheduler) {}

bool StreamSink::Push(const cache::Event& e, bool backlog) {
  grpc::Slice slice = Encoded(e);
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return true;
    if (!backlog && queue_.size() >= limit_) return false;
    queue_.push_back(std::move(slice));
    if (writing_ || scheduled_) return true;
    scheduled_ = true;
  }
  scheduler_->Schedule(shared_from_this());
  return true;
}

void StreamSink::Close(const absl::Status& why) {
  grpc::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    status_ = ToGrpc(why);
    queue_.clear();
    if (writing_ || finished_) return;
    finished_ = true;
    status = status_;
  }
  writer_->Finish(status);
}

size_t StreamSink::Flush() {
  size_t events;
  {
    absl::MutexLock lock(&mu_);
    scheduled_ = false;
    if (writing_ || closed_ || queue_.empty()) return 0;
    writing_ = true;
    events = TakeBatch();
  }
  writer_->StartWrite(buffer_);
  return events;
}

void StreamSink::WriteDone(bool ok) {
  bool schedule = false, finish = false;
  grpc::Status status;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) closed_ = true;
    if (!closed_ && !queue_.empty() && !scheduled_) {
      scheduled_ = schedule = true;
    } else if (closed_ && !finished_) {
      finished_ = finish = true;
      status = status_;
    }
  }
  if (schedule) scheduler_->Schedule(shared_from_this());
  if (finish) writer_->Finish(status);
}

size_t StreamSink::TakeBatch() {
  size_t n = 0, bytes = 0;
  while (n < queue_.size() && (n == 0 || bytes + queue_[n].size() <= kMaxBatchBytes)) {
    bytes += queue_[n++].size();
  }
  const auto end = queue_.begin() + static_cast<std::ptrdiff_t>(n);
  batch_.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(end));
  queue_.erase(queue_.begin(), end);
  grpc::ByteBuffer next(batch_.data(), batch_.size());
  buffer_.Swap(&next);
  return n;
}

// What to do when an operation completes on a lane's queue.
using Tag = std::function<void(bool ok)>;

// A completion queue and the thread that polls it, with the sinks of its calls.
class WatchServer::Lane final : public SinkScheduler {
 public:
  Lane(WatchServer* server, std::unique_ptr<grpc::ServerCompletionQueue> cq)
      : server_(server), cq_(std::move(cq)), wake_([this](bool) {
          absl::MutexLock lock(&mu_);
          alarm_set_ = false;
        }) {}

  void Start();
  // With every call ended: ends the queue and, once the thread has drained it, the thread.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Keeps one call requested on this lane (unless the server is stopping).
  void Accept();
  void Schedule(std::shared_ptr<StreamSink> sink) override ABSL_LOCKS_EXCLUDED(mu_);

  WatchServer* server() { return server_; }
  grpc::ServerCompletionQueue* cq() { return cq_.get(); }

 private:
  enum class Next { kHandled, kTimeout, kShutdown };

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until `deadline` for one event and handles it.
  Next HandleNext(std::chrono::system_clock::time_point deadline);
  // Handles every event already queued; false once the queue has shut down.
  bool Drain();

  WatchServer* const server_;
  const std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  Tag wake_;  // the alarm's tag
  std::thread thread_;
  absl::Mutex mu_;
  grpc::Alarm alarm_ ABSL_GUARDED_BY(mu_);  // wakes the thread when work arrives
  bool alarm_set_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::shared_ptr<StreamSink>> due_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// One Watch call. Every event of it completes on its lane's thread; it deletes itself once
// both its end (Finish) and gRPC's notice that the call is over have come back.
class WatchServer::Call final : public StreamSink::Writer {
 public:
  explicit Call(Lane* lane)
      : lane_(lane),
        server_(lane->server()),
        sink_(std::make_shared<StreamSink>(this, server_->queue_limit_, lane)),
        requested_([this](bool ok) { OnRequested(ok); }),
        wrote_([this](bool ok) { sink_->WriteDone(ok); }),
        finished_([this](bool) {
          finish_seen_ = true;
          MaybeDelete();
        }),
        done_([this](bool) { OnDone(); }) {
    ctx_.AsyncNotifyWhenDone(&done_);
    server_->handlers_.request(&ctx_, &request_, &writer_, lane_->cq(), &requested_);
  }

  ~Call() override {
    absl::MutexLock lock(&server_->mu_);
    --server_->calls_;  // the server's destructor awaits 0
  }

  void StartWrite(const grpc::ByteBuffer& message) override { writer_.Write(message, &wrote_); }
  void Finish(const grpc::Status& status) override { writer_.Finish(status, &finished_); }

 private:
  void OnRequested(bool ok) {
    if (!ok) {  // the server is shutting down: no call came, so no notice will either
      delete this;
      return;
    }
    lane_->Accept();
    auto id = server_->handlers_.start(&ctx_, &request_, sink_);
    if (!id.ok()) {
      sink_->Close(id.status());
      return;
    }
    id_ = *id;
  }
  void OnDone() {
    done_seen_ = true;
    if (id_) server_->handlers_.stop(std::exchange(id_, 0));
    sink_->Close(absl::CancelledError("watch canceled"));
    MaybeDelete();
  }
  void MaybeDelete() {
    if (finish_seen_ && done_seen_) delete this;
  }

  Lane* const lane_;
  WatchServer* const server_;
  grpc::ServerContext ctx_;
  grpc::ByteBuffer request_;
  grpc::ServerAsyncWriter<grpc::ByteBuffer> writer_{&ctx_};
  const std::shared_ptr<StreamSink> sink_;
  Tag requested_, wrote_, finished_, done_;
  uint64_t id_ = 0;
  bool finish_seen_ = false, done_seen_ = false;
};

void WatchServer::Lane::Start() {
  Accept();
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "watch-server");
    Loop();
  });
}

void WatchServer::Lane::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (alarm_set_) alarm_.Cancel();
  }
  cq_->Shutdown();
  thread_.join();  // the thread drains the queue to its end
}

void WatchServer::Lane::Accept() {
  {
    absl::MutexLock lock(&server_->mu_);
    if (server_->stopping_) return;
    ++server_->calls_;
  }
  new Call(this);
}

void WatchServer::Lane::Schedule(std::shared_ptr<StreamSink> sink) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  due_.push_back(std::move(sink));
  // The thread may be waiting for events with nothing due: wake it.
  if (due_.size() == 1 && !alarm_set_) {
    alarm_set_ = true;
    alarm_.Set(cq_.get(), std::chrono::system_clock::now(), &wake_);
  }
}

WatchServer::Lane::Next WatchServer::Lane::HandleNext(
    std::chrono::system_clock::time_point deadline) {
  void* tag;
  bool ok;
  switch (cq_->AsyncNext(&tag, &ok, deadline)) {
    case grpc::CompletionQueue::SHUTDOWN:
      return Next::kShutdown;
    case grpc::CompletionQueue::TIMEOUT:
      return Next::kTimeout;
    case grpc::CompletionQueue::GOT_EVENT:
      break;
  }
  (*static_cast<Tag*>(tag))(ok);
  return Next::kHandled;
}

bool WatchServer::Lane::Drain() {
  Next next;
  while ((next = HandleNext({})) == Next::kHandled) {
  }
  return next == Next::kTimeout;
}

void WatchServer::Lane::Loop() {
  using Clock = std::chrono::system_clock;  // what completion-queue deadlines take
  const auto interval = server_->interval_;
  // Rounds go in windows of `interval`: a window's rounds start at once until they have sent
  // kQuickEvents, then the next waits for the next window. A quiet lane (a few watches, a
  // few events: a pod starting) so sends each event as it comes, and a busy one gathers.
  Clock::time_point window_start;
  size_t window_events = 0;
  std::vector<std::shared_ptr<StreamSink>> round;
  for (;;) {
    bool due;
    {
      absl::MutexLock lock(&mu_);
      due = !due_.empty();
    }
    const Clock::time_point now = Clock::now();
    const Clock::time_point window_end = window_start + interval;
    const bool new_window = now >= window_end;
    if (due && (new_window || window_events < kQuickEvents)) {
      // Every write that has completed by now lets its stream into this round.
      if (!Drain()) return;
      if (new_window) {
        window_start = now;
        window_events = 0;
      }
      {
        absl::MutexLock lock(&mu_);
        round.swap(due_);
      }
      for (auto& s : round) window_events += s->Flush();
      round.clear();
      continue;
    }
    if (HandleNext(due ? window_end : now + std::chrono::seconds(1)) == Next::kShutdown) return;
  }
}

WatchServer::WatchServer(std::chrono::milliseconds interval, size_t queue_limit, Handlers handlers)
    : interval_(interval), queue_limit_(queue_limit), handlers_(std::move(handlers)) {}

WatchServer::~WatchServer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    // The gRPC server's shutdown has cancelled every call: wait until each has seen its end
    // (no operation may start on a queue that is shutting down).
    const auto ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_ == 0; };
    mu_.Await(absl::Condition(&ended));
  }
  for (auto& lane : lanes_) lane->Stop();
}

void WatchServer::Start(std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> cqs) {
  for (auto& cq : cqs) lanes_.push_back(std::make_unique<Lane>(this, std::move(cq)));
  for (auto& lane : lanes_) lane->Start();
}

}  // namespace mkube::apiserver::server
