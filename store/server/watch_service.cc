#include "store/server/watch_service.h"

#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <set>

#include "absl/base/thread_annotations.h"

namespace mkube::store::server {
namespace {

using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;
// Raw: responses are written as bytes, most of them made of events encoded once for every
// watcher (see watch::EncodedEvents).
using Reactor = grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>;

// One slice holding `head` and then `parts`, back to back.
grpc::ByteBuffer Join(const std::string& head,
                      const std::vector<std::shared_ptr<const std::string>>& parts, size_t size) {
  grpc_slice slice = grpc_slice_malloc(size);
  uint8_t* p = GRPC_SLICE_START_PTR(slice);
  std::memcpy(p, head.data(), head.size());
  p += head.size();
  for (const auto& part : parts) {
    std::memcpy(p, part->data(), part->size());
    p += part->size();
  }
  grpc::Slice owned(slice, grpc::Slice::STEAL_REF);
  return grpc::ByteBuffer(&owned, 1);
}

// The write side of one stream: a bounded queue with one write in flight. StartWrite is
// called only by the thread that moved `writing_` to true, and Finish only when no write is
// in flight, so neither needs the lock held.
class StreamSink final : public watch::WatchSink {
 public:
  StreamSink(Reactor* reactor, watch::WatchHub* hub, size_t high, size_t low)
      : reactor_(reactor), hub_(hub), high_(high), low_(low) {}

  bool Send(WatchResponse&& resp, bool force) override {
    grpc::ByteBuffer message;
    bool own;
    grpc::SerializationTraits<WatchResponse>::Serialize(resp, &message, &own);
    const size_t size = message.Length();
    return Queue(std::move(message), size, force);
  }

  bool SendEvents(watch::EncodedEvents&& events, bool force) override {
    WatchResponse head;
    *head.mutable_header() = std::move(events.header);
    head.set_watch_id(events.watch_id);
    const std::string bytes = head.SerializeAsString();
    const size_t size = bytes.size() + events.bytes;
    return Queue(Join(bytes, events.events, size), size, force);
  }

  bool Queue(grpc::ByteBuffer message, size_t size, bool force) {
    const grpc::ByteBuffer* start = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return true;  // Nobody reads any more: drop silently.
      if (!force && bytes_ > high_) {
        refused_ = true;
        return false;
      }
      sizes_.push_back(size);
      bytes_ += size;
      queue_.push_back(std::move(message));
      if (!writing_) {
        writing_ = true;
        start = &queue_.front();
      }
    }
    if (start) reactor_->StartWrite(start);
    return true;
  }

  bool HasRoom() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_ < low_;
  }

  // Called from OnWriteDone.
  void WriteDone(bool ok) {
    const grpc::ByteBuffer* next = nullptr;
    bool finish = false, wake = false;
    grpc::Status status;
    {
      std::lock_guard<std::mutex> lock(mu_);
      bytes_ -= sizes_.front();
      sizes_.pop_front();
      queue_.pop_front();
      if (!ok) closed_ = true;
      if (!closed_ && !queue_.empty()) {
        next = &queue_.front();
      } else {
        writing_ = false;
        finish = closed_ && !finished_;
        if (finish) finished_ = true;
        status = status_;
      }
      if (refused_ && bytes_ < low_) {
        refused_ = false;
        wake = true;
      }
    }
    if (next) reactor_->StartWrite(next);
    if (finish) reactor_->Finish(status);
    if (wake) hub_->Wake();
  }

  // The client is gone or done (or sent what cannot be read): finish with `status` once the
  // write in flight (if any) completes.
  void Close(const grpc::Status& status = grpc::Status::OK) {
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      status_ = status;
      if (!writing_ && !finished_) finish = finished_ = true;
    }
    if (finish) reactor_->Finish(status);
  }

 private:
  Reactor* reactor_;
  watch::WatchHub* hub_;
  const size_t high_, low_;
  mutable std::mutex mu_;
  std::deque<grpc::ByteBuffer> queue_ ABSL_GUARDED_BY(mu_);
  std::deque<size_t> sizes_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool refused_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_) = grpc::Status::OK;
};

class WatchStream final : public Reactor {
 public:
  WatchStream(const ServiceContext& ctx, size_t high, size_t low)
      : ctx_(ctx), sink_(std::make_shared<StreamSink>(this, ctx.hub, high, low)) {
    StartRead(&raw_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      ctx_.hub->RemoveSink(sink_.get());
      sink_->Close();
      return;
    }
    if (!grpc::SerializationTraits<WatchRequest>::Deserialize(&raw_, &req_).ok()) {
      ctx_.hub->RemoveSink(sink_.get());
      sink_->Close(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "cannot decode the watch request"));
      return;
    }
    switch (req_.request_union_case()) {
      case WatchRequest::kCreateRequest: Create(req_.create_request()); break;
      case WatchRequest::kCancelRequest:
        ids_.erase(req_.cancel_request().watch_id());
        ctx_.hub->Cancel(sink_, req_.cancel_request().watch_id());
        break;
      case WatchRequest::kProgressRequest: ctx_.hub->RequestProgress(sink_); break;
      default: break;
    }
    StartRead(&raw_);
  }

  void OnWriteDone(bool ok) override { sink_->WriteDone(ok); }

  void OnDone() override {
    ctx_.hub->RemoveSink(sink_.get());
    delete this;
  }

  void OnCancel() override { sink_->Close(); }

 private:
  void Create(const etcdserverpb::WatchCreateRequest& c) {
    const int64_t current = ctx_.store->Revision();
    const int64_t compacted = ctx_.store->CompactedRevision();
    int64_t id = c.watch_id();
    WatchResponse created;
    ctx_.FillHeader(created.mutable_header());
    created.mutable_header()->set_revision(current);
    created.set_created(true);
    if (id != 0 && ids_.contains(id)) {
      created.set_watch_id(id);
      created.set_canceled(true);
      created.set_cancel_reason("mvcc: duplicate watch ID provided on the WatchStream");
      sink_->Send(std::move(created), true);
      return;
    }
    if (id == 0) {
      while (ids_.contains(next_id_)) ++next_id_;
      id = next_id_++;
    }
    ids_.insert(id);
    created.set_watch_id(id);
    sink_->Send(std::move(created), true);

    if (c.start_revision() > 0 && c.start_revision() < compacted) {
      WatchResponse canceled;
      ctx_.FillHeader(canceled.mutable_header());
      canceled.mutable_header()->set_revision(0);
      canceled.set_watch_id(id);
      canceled.set_canceled(true);
      canceled.set_compact_revision(compacted);
      sink_->Send(std::move(canceled), true);
      ids_.erase(id);
      return;
    }
    watch::WatchSpec spec;
    spec.key = c.key();
    spec.range_end = c.range_end();
    spec.prev_kv = c.prev_kv();
    spec.progress_notify = c.progress_notify();
    for (int f : c.filters()) {
      if (f == etcdserverpb::WatchCreateRequest::NOPUT) spec.no_put = true;
      if (f == etcdserverpb::WatchCreateRequest::NODELETE) spec.no_delete = true;
    }
    const int64_t next = c.start_revision() > 0 ? c.start_revision() : current + 1;
    ctx_.hub->Add(sink_, id, std::move(spec), next);
  }

  const ServiceContext& ctx_;
  std::shared_ptr<StreamSink> sink_;
  grpc::ByteBuffer raw_;
  WatchRequest req_;
  // Only the reading side touches these, one read at a time.
  std::set<int64_t> ids_;
  int64_t next_id_ = 0;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* WatchService::Watch(
    grpc::CallbackServerContext* context) {
  return new WatchStream(ctx_, high_water_, low_water_);
}

}  // namespace mkube::store::server
