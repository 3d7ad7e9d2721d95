// A connection's HTTP/2, by libnghttp2: it reads and writes the frames (framing, HPACK, flow
// control, RFC 9113's checks) on memory buffers; calls, messages, limits and the connection's
// output are Connection's (connection.cc).
#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "base/log.h"
#include "fmt/format.h"
#include "store/rpc/connection.h"
#include "store/rpc/loop.h"

namespace mkube::store::rpc {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("rpc");
  return logger;
}

nghttp2_nv Field(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

// A status as trailer fields; the strings they point into live in `code` and `message`.
void StatusFields(const absl::Status& st, std::string* code, std::string* message,
                  std::vector<nghttp2_nv>* out) {
  *code = std::to_string(static_cast<int>(st.code()));
  out->push_back(Field("grpc-status", *code));
  if (!st.ok() && !st.message().empty()) {
    *message = PercentEncode(std::string(st.message()));
    out->push_back(Field("grpc-message", *message));
  }
}

}  // namespace

struct Http2Callbacks {
  static Connection* Of(void* user) { return static_cast<Connection*>(user); }

  static int BeginFrame(nghttp2_session* session, const nghttp2_frame_hd* hd, void* user) {
    // Even ids, and ids the client used before, are nghttp2's to judge.
    if (hd->type != NGHTTP2_HEADERS || hd->stream_id % 2 == 0) return 0;
    if (!Of(user)->stream_ids_.Use(static_cast<uint32_t>(hd->stream_id))) {
      Log().debug("HEADERS on stream {}, below a stream id already used", hd->stream_id);
      // GOAWAY PROTOCOL_ERROR; nghttp2 reads nothing more and closes once it is sent.
      nghttp2_session_terminate_session(session, NGHTTP2_PROTOCOL_ERROR);
    }
    return 0;
  }

  static int BeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      Of(user)->requests_[frame->hd.stream_id];
    }
    return 0;
  }

  static int Header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                    size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    Connection* c = Of(user);
    auto it = c->requests_.find(frame->hd.stream_id);
    if (it == c->requests_.end()) return 0;  // a client's trailers: nothing in them counts
    it->second.Add(std::string_view(reinterpret_cast<const char*>(name), namelen),
                   std::string_view(reinterpret_cast<const char*>(value), valuelen));
    return 0;
  }

  static int FrameReceived(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    Connection* c = Of(user);
    if (c->closed_) return NGHTTP2_ERR_CALLBACK_FAILURE;
    const uint32_t id = frame->hd.stream_id;
    const bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
    if (frame->hd.type == NGHTTP2_HEADERS) {
      auto it = c->requests_.find(id);
      if (it != c->requests_.end()) {
        Connection::RequestHeaders h = std::move(it->second);
        c->requests_.erase(it);
        c->StartCall(id, h);  // nghttp2 has checked the request's form (RFC 9113 8.2, 8.3)
      }
    }
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) && end) {
      c->HalfClose(id);
    }
    return 0;
  }

  static int DataChunk(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                       void* user) {
    Connection* c = Of(user);
    if (c->closed_) return NGHTTP2_ERR_CALLBACK_FAILURE;
    auto it = c->streams_.find(id);
    if (it == c->streams_.end() || it->second.finish_pending) return 0;
    c->OnMessages(id, it->second, std::string_view(reinterpret_cast<const char*>(data), len));
    return 0;
  }

  static int StreamClosed(nghttp2_session*, int32_t id, uint32_t, void* user) {
    Connection* c = Of(user);
    c->requests_.erase(id);
    c->Forget(id);
    return 0;
  }

  static int Error(nghttp2_session*, int, const char* message, size_t len, void*) {
    Log().debug("HTTP/2: {}", std::string_view(message, len));
    return 0;
  }

  static ssize_t Read(nghttp2_session*, int32_t id, uint8_t* buf, size_t length, uint32_t* flags,
                      nghttp2_data_source*, void* user) {
    return Of(user)->ReadData(id, buf, length, flags);
  }
};

bool StreamIds::Use(uint32_t id) {
  if (id > highest_) {
    if (id > highest_ + 2) {
      skipped_.emplace_back(highest_ + (highest_ == 0 ? 1 : 2), id - 2);
      if (skipped_.size() > kMaxGaps) skipped_.pop_front();
    }
    highest_ = id;
    return true;
  }
  // The gaps are in order: the last one that begins at or below id.
  auto it = std::upper_bound(skipped_.begin(), skipped_.end(), id,
                             [](uint32_t v, const auto& gap) { return v < gap.first; });
  return it == skipped_.begin() || std::prev(it)->second < id;
}

std::string RefusalFrames(std::string_view why) {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session* session = nullptr;
  nghttp2_session_server_new(&session, callbacks, nullptr);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);
  nghttp2_submit_goaway(session, NGHTTP2_FLAG_NONE, 0, NGHTTP2_ENHANCE_YOUR_CALM,
                        reinterpret_cast<const uint8_t*>(why.data()), why.size());
  std::string out;
  const uint8_t* data = nullptr;
  for (ssize_t n; (n = nghttp2_session_mem_send(session, &data)) > 0;) {
    out.append(reinterpret_cast<const char*>(data), n);
  }
  nghttp2_session_del(session);
  return out;
}

Connection::~Connection() {
  if (session_) nghttp2_session_del(session_);
  if (fd_ >= 0) ::close(fd_);
}

void Connection::Open() {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, Http2Callbacks::BeginFrame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, Http2Callbacks::BeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, Http2Callbacks::Header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Http2Callbacks::FrameReceived);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, Http2Callbacks::DataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, Http2Callbacks::StreamClosed);
  nghttp2_session_callbacks_set_error_callback2(callbacks, Http2Callbacks::Error);
  // nghttp2's defaults bound the rest: 1,000 PING/SETTINGS acks queued (past them the input
  // is refused as a flood), 32 entries in a SETTINGS frame, 4 KiB of HPACK table.
  nghttp2_session_server_new(&session_, callbacks, this);
  nghttp2_session_callbacks_del(callbacks);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, loop_->max_streams()},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kStreamWindow)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(kMaxHeaderList)},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                        static_cast<int32_t>(kConnWindow));
  Dirty();
}

bool Connection::Receive(std::string_view data) {
  const ssize_t n = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const uint8_t*>(data.data()), data.size());
  if (closed_) return false;
  if (n < 0) {  // fatal (a flood, a bad preface): the session can do nothing more
    Log().debug("HTTP/2: {}", nghttp2_strerror(static_cast<int>(n)));
    Close();
    return false;
  }
  if (TakeFrames()) Dirty();
  if (closed_) return false;
  if (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_)) {
    Flush();
    Close();
    return false;
  }
  return true;
}

bool Connection::TakeFrames() {
  bool took = false;
  for (;;) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      Log().debug("HTTP/2: {}", nghttp2_strerror(static_cast<int>(n)));
      Close();
      return false;
    }
    if (n == 0) return took;
    out_.append(reinterpret_cast<const char*>(data), n);
    took = true;
  }
}

ssize_t Connection::ReadData(uint32_t id, uint8_t* buf, size_t length, uint32_t* flags) {
  auto it = streams_.find(id);
  if (it == streams_.end()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return 0;
  }
  Stream& s = it->second;
  if (Unsent() > kOutputHighWater && !s.pending.empty()) {
    s.deferred = true;
    if (!s.blocked) {
      s.blocked = true;
      blocked_.push_back(id);
    }
    return NGHTTP2_ERR_DEFERRED;
  }
  size_t n = 0;
  while (n < length && !s.pending.empty()) {
    const std::string& m = s.pending.front();
    const size_t take = std::min(length - n, m.size() - s.pending_offset);
    std::memcpy(buf + n, m.data() + s.pending_offset, take);
    n += take;
    s.pending_offset += take;
    pending_bytes_ -= take;
    ReplyGone(s, take);
    if (s.server) s.server->queued_.fetch_sub(take, std::memory_order_acq_rel);
    if (s.pending_offset == m.size()) {
      s.pending.pop_front();
      s.pending_offset = 0;
      pending_bytes_ -= kQueuedMessageCost;
    }
  }
  NotifyDrained(s);
  if (!s.pending.empty()) return static_cast<ssize_t>(n);
  if (s.finish_pending) {
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    std::string code, message;
    std::vector<nghttp2_nv> trailers;
    StatusFields(s.final_status, &code, &message, &trailers);
    nghttp2_submit_trailer(session_, id, trailers.data(), trailers.size());
    Forget(id);  // the answer is all nghttp2's now
  } else if (n == 0) {
    s.deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  return static_cast<ssize_t>(n);
}

void Connection::Pump(uint32_t id, Stream& s) {
  if (!s.headers_sent) {
    s.headers_sent = true;
    const nghttp2_nv headers[] = {Field(":status", "200"),
                                  Field("content-type", "application/grpc")};
    nghttp2_data_provider source{};
    source.read_callback = Http2Callbacks::Read;
    nghttp2_submit_response(session_, id, headers, std::size(headers), &source);
  } else if (s.deferred) {
    s.deferred = false;
    nghttp2_session_resume_data(session_, id);
  }
  Dirty();
}

void Connection::Answer(uint32_t id, const absl::Status& status) {
  auto it = streams_.find(id);
  if (it != streams_.end() && it->second.headers_sent) {
    // The answer's headers are out: the messages not begun are dropped and the status
    // follows as trailers, at once (HEADERS are not held by flow control), or after the rest
    // of a message half sent.
    Stream& s = it->second;
    size_t dropped = 0;
    while (s.pending.size() > (s.pending_offset > 0 ? 1 : 0)) {
      dropped += s.pending.back().size();
      pending_bytes_ -= s.pending.back().size() + kQueuedMessageCost;
      ReplyGone(s, s.pending.back().size());
      s.pending.pop_back();
    }
    if (s.server) s.server->queued_.fetch_sub(dropped, std::memory_order_acq_rel);
    s.finish_pending = true;
    s.final_status = status;
    if (!s.pending.empty()) {
      Pump(id, s);
      return;
    }
    std::string code, message;
    std::vector<nghttp2_nv> trailers;
    StatusFields(status, &code, &message, &trailers);
    nghttp2_submit_trailer(session_, id, trailers.data(), trailers.size());
    Forget(id);
    Dirty();
    return;
  }
  // Trailers-Only: one HEADERS frame that ends the stream.
  std::string code, message;
  std::vector<nghttp2_nv> fields = {Field(":status", "200"),
                                    Field("content-type", "application/grpc")};
  StatusFields(status, &code, &message, &fields);
  nghttp2_submit_response(session_, id, fields.data(), fields.size(), nullptr);
  Forget(id);
  Dirty();
}

void Connection::ReplyHttpError(uint32_t id, const char* http_status, const absl::Status* grpc) {
  std::string code, message;
  std::vector<nghttp2_nv> fields = {Field(":status", http_status)};
  if (grpc) {
    fields.push_back(Field("content-type", "application/grpc"));
    StatusFields(*grpc, &code, &message, &fields);
  }
  nghttp2_submit_response(session_, id, fields.data(), fields.size(), nullptr);
  Dirty();
}

void Connection::Reset(uint32_t id, ErrorCode code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, code);
  Forget(id);
  Dirty();
}

void Connection::SendGoAway(ErrorCode code, std::string_view why) {
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), code,
                        reinterpret_cast<const uint8_t*>(why.data()), why.size());
}

}  // namespace mkube::store::rpc
