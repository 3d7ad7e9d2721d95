#include <atomic>
#include <cstring>
#include <memory>
#include <set>

#include "store/mvcc/validate.h"
#include "store/server/services.h"

namespace mkube::store::server {
namespace {

using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;

// The sending side of one Watch stream: responses are queued on the transport's stream, whose
// unsent bytes bound it. Past high_water a response is refused (the hub catches that watcher
// up later from history); once the stream drains to low_water the hub is woken.
class StreamSink final : public watch::WatchSink {
 public:
  StreamSink(std::shared_ptr<rpc::ServerStream> stream, watch::WatchHub* hub, size_t high,
             size_t low)
      : stream_(std::move(stream)), hub_(hub), high_(high), low_(low) {
    stream_->OnDrained(low_, [hub] { hub->Wake(); });
  }

  bool Send(WatchResponse&& resp, bool force) override {
    return Queue(rpc::FrameMessage(resp), force);
  }

  // The response's header and watch id, then the events as they were encoded for everyone.
  bool SendEvents(watch::EncodedEvents&& events, bool force) override {
    WatchResponse head;
    *head.mutable_header() = std::move(events.header);
    head.set_watch_id(events.watch_id);
    const size_t head_size = head.ByteSizeLong();
    std::string framed = rpc::NewFrame(head_size + events.bytes);
    char* p = framed.data() + 5;
    head.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(p));
    p += head_size;
    for (const auto& e : events.events) {
      std::memcpy(p, e->data(), e->size());
      p += e->size();
    }
    return Queue(std::move(framed), force);
  }

  bool HasRoom() const override { return stream_->queued_bytes() < low_; }

  void Close() { closed_.store(true, std::memory_order_release); }

 private:
  bool Queue(std::string framed, bool force) {
    if (closed_.load(std::memory_order_acquire)) return true;  // nobody reads any more
    if (!force && stream_->queued_bytes() > high_) {
      stream_->ArmDrained();
      // It may have drained before it was armed: then nobody else will wake the hub.
      if (stream_->queued_bytes() <= low_) hub_->Wake();
      return false;
    }
    stream_->Write(std::move(framed));
    return true;
  }

  std::shared_ptr<rpc::ServerStream> stream_;
  watch::WatchHub* hub_;
  const size_t high_, low_;
  std::atomic<bool> closed_{false};
};

class WatchStream final : public rpc::StreamHandler {
 public:
  WatchStream(const ServiceContext& ctx, std::shared_ptr<rpc::ServerStream> stream, size_t high,
              size_t low)
      : ctx_(ctx), stream_(stream), sink_(std::make_shared<StreamSink>(stream, ctx.hub, high, low)) {}

  void OnMessage(std::string_view message) override {
    WatchRequest req;
    if (!req.ParseFromArray(message.data(), static_cast<int>(message.size()))) {
      stream_->Finish(absl::InvalidArgumentError("cannot decode the watch request"));
      return;
    }
    switch (req.request_union_case()) {
      case WatchRequest::kCreateRequest: Create(req.create_request()); break;
      case WatchRequest::kCancelRequest:
        // The hub only hears of watches it was given (it ignores others anyway): so cancels
        // waiting for it are bounded by the additions.
        if (ids_.erase(req.cancel_request().watch_id()) > 0) {
          ctx_.hub->Cancel(sink_, req.cancel_request().watch_id());
        }
        break;
      case WatchRequest::kProgressRequest: ctx_.hub->RequestProgress(sink_); break;
      default: break;
    }
  }

  // The client sends no more: the stream ends (as etcd's does).
  void OnHalfClose() override { stream_->Finish(absl::OkStatus()); }

  void OnClose() override {
    sink_->Close();
    ctx_.hub->RemoveSink(sink_.get());
  }

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
    if (!ctx_.hub->Add(sink_, id, std::move(spec), next)) {
      // The hub is too far behind on additions: the watch ends at once, as etcd's watches
      // canceled by the server do; the client may retry.
      WatchResponse refused;
      ctx_.FillHeader(refused.mutable_header());
      refused.set_watch_id(id);
      refused.set_canceled(true);
      refused.set_cancel_reason(mvcc::kErrTooManyRequests);
      sink_->Send(std::move(refused), true);
      ids_.erase(id);
    }
  }

  const ServiceContext& ctx_;
  std::shared_ptr<rpc::ServerStream> stream_;
  std::shared_ptr<StreamSink> sink_;
  // Only the reading side touches these, one message at a time.
  std::set<int64_t> ids_;
  int64_t next_id_ = 0;
};

}  // namespace

void AddWatchService(rpc::Server& server, const ServiceContext& ctx, size_t high_water,
                     size_t low_water) {
  server.AddStream("/etcdserverpb.Watch/Watch",
                   [&ctx, high_water, low_water](std::shared_ptr<rpc::ServerStream> stream) {
                     return std::make_unique<WatchStream>(ctx, std::move(stream), high_water,
                                                          low_water);
                   });
}

}  // namespace mkube::store::server
