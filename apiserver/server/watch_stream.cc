#include "apiserver/server/watch_stream.h"

#include <algorithm>
#include <cstring>

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

// The entry's encoding for this event type, made once for all watchers (the cache's lock,
// held while sinks are pushed to, guards the memo).
grpc::Slice Encoded(const cache::Event& e) {
  if (!e.entry || e.type == cache::EventType::kBookmark) return EncodeEvent(e);
  std::shared_ptr<const void>& slot = e.entry->encoded.slot(e.type);
  if (!slot) slot = std::make_shared<const grpc::Slice>(EncodeEvent(e));
  return *static_cast<const grpc::Slice*>(slot.get());
}

}  // namespace

StreamSink::StreamSink(grpc::ServerWriteReactor<grpc::ByteBuffer>* reactor, size_t limit,
                       WatchFlusher* flusher)
    : reactor_(reactor), limit_(limit), flusher_(flusher) {}

bool StreamSink::Push(const cache::Event& e, bool backlog) {
  grpc::Slice slice = Encoded(e);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return true;
    if (!backlog && queue_.size() >= limit_) return false;
    queue_.push_back(std::move(slice));
    if (writing_ || scheduled_) return true;
    scheduled_ = true;
  }
  flusher_->Schedule(shared_from_this());
  return true;
}

void StreamSink::Close(const absl::Status& why) {
  grpc::Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    status_ = ToGrpc(why);
    queue_.clear();
    if (writing_ || finished_) return;
    finished_ = true;
    status = status_;
  }
  reactor_->Finish(status);
}

void StreamSink::Flush() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    scheduled_ = false;
    if (writing_ || closed_ || queue_.empty()) return;
    writing_ = true;
    TakeBatch();
  }
  reactor_->StartWrite(&buffer_);
}

void StreamSink::WriteDone(bool ok) {
  bool schedule = false, finish = false;
  grpc::Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) closed_ = true;
    if (!closed_ && !queue_.empty() && !scheduled_) {
      scheduled_ = schedule = true;
    } else if (closed_ && !finished_) {
      finished_ = finish = true;
      status = status_;
    }
  }
  if (schedule) flusher_->Schedule(shared_from_this());
  if (finish) reactor_->Finish(status);
}

void StreamSink::TakeBatch() {
  size_t n = 0, bytes = 0;
  while (n < queue_.size() && (n == 0 || bytes + queue_[n].size() <= kMaxBatchBytes)) {
    bytes += queue_[n++].size();
  }
  const auto end = queue_.begin() + static_cast<std::ptrdiff_t>(n);
  batch_.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(end));
  queue_.erase(queue_.begin(), end);
  grpc::ByteBuffer next(batch_.data(), batch_.size());
  buffer_.Swap(&next);
}

WatchFlusher::WatchFlusher(std::chrono::milliseconds interval)
    : interval_(interval), thread_([this] {
        pthread_setname_np(pthread_self(), "watch-flusher");
        Loop();
      }) {}

WatchFlusher::~WatchFlusher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void WatchFlusher::Schedule(std::shared_ptr<StreamSink> sink) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake = due_.empty();
    due_.push_back(std::move(sink));
  }
  if (wake) cv_.notify_one();
}

void WatchFlusher::Loop() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_round;
  std::vector<std::shared_ptr<StreamSink>> round;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !due_.empty(); });
    if (stopping_) return;
    if (interval_.count() > 0) {
      cv_.wait_until(lock, last_round + interval_, [&] { return stopping_; });
      if (stopping_) return;
    }
    last_round = Clock::now();
    round.swap(due_);
    lock.unlock();
    for (auto& s : round) s->Flush();
    round.clear();
    lock.lock();
  }
}

}  // namespace mkube::apiserver::server
