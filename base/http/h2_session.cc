#include "base/http/h2_session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "fmt/format.h"

namespace mkube::http::detail {
namespace {

constexpr size_t kReadBuffer = 16 << 10;
// Frames gathered into one write of the socket at most.
constexpr size_t kWriteHighWater = 256 << 10;
constexpr uint32_t kMaxStreams = 1000;
constexpr int32_t kStreamWindow = 1 << 20;  // what a client may send on a stream unacknowledged

// Fields of HTTP/1.1 that say how the connection goes; HTTP/2 forbids them.
bool ConnectionSpecific(const std::string& name) {
  return name == "connection" || name == "keep-alive" || name == "transfer-encoding" ||
         name == "upgrade" || name == "proxy-connection";
}

class H2Exchange final : public Exchange {
 public:
  H2Exchange(std::weak_ptr<H2Stream> s, size_t max_backlog)
      : s_(std::move(s)), max_backlog_(max_backlog) {}

  void Finish(Response r) override {
    OnStrand([r = std::move(r)](H2Session& h, H2Stream* s) mutable { h.Answer(s, std::move(r)); });
  }
  void Start(int status, std::string content_type) override {
    OnStrand([status, ct = std::move(content_type)](H2Session& h, H2Stream* s) mutable {
      h.Begin(s, status, std::move(ct));
    });
  }
  bool Write(std::string chunk) override {
    return Write(std::make_shared<const std::string>(std::move(chunk)));
  }
  bool Write(Piece piece) override {
    auto s = s_.lock();
    return s && s->Enqueue(std::move(piece), max_backlog_, false);
  }
  bool WriteWaiting(std::string chunk) override {
    auto s = s_.lock();
    if (!s || !s->WaitBelow(max_backlog_)) return false;
    return s->Enqueue(std::make_shared<const std::string>(std::move(chunk)), SIZE_MAX, false);
  }
  void End() override {
    if (auto s = s_.lock()) s->Enqueue(nullptr, SIZE_MAX, true);
  }
  void OnClose(std::function<void()> f) override {
    auto s = s_.lock();
    auto h = s ? s->session() : nullptr;
    if (!h) return f();
    h->Post([h, s, f = std::move(f)]() mutable { h->OnClose(s.get(), std::move(f)); });
  }
  void AcceptWebSocket(std::string, std::function<WebSocketHandlers(WebSocketPtr)>) override {
    Finish({.status = 400,
            .content_type = "text/plain",
            .body = "a WebSocket needs an HTTP/1.1 connection"});
  }

 private:
  template <typename F>
  void OnStrand(F f) {
    auto s = s_.lock();
    auto h = s ? s->session() : nullptr;
    if (!h) return;
    h->Post([h, s, f = std::move(f)]() mutable { f(*h, s.get()); });
  }

  std::weak_ptr<H2Stream> s_;
  size_t max_backlog_;
};

}  // namespace

void H2Stream::Post(std::function<void()> f) {
  if (auto h = session_.lock()) h->Post(std::move(f));
}

void H2Stream::PostFlush() {
  if (auto h = session_.lock()) {
    h->Post([h, self = shared_from_this()] { h->Flush(self.get()); });
  }
}

bool H2Stream::Enqueue(Piece piece, size_t limit, bool end) {
  const size_t n = piece ? piece->size() : 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (gone.load() || backlog.load() > limit) return false;
    backlog.fetch_add(n);  // until a DATA frame has taken it
    pending_.emplace_back(std::move(piece), end);
    if (flush_due_) return true;
    flush_due_ = true;
  }
  ctx_->Due(shared_from_this());
  return true;
}

void H2Stream::TakePending(std::vector<std::pair<Piece, bool>>* into) {
  std::lock_guard<std::mutex> l(mu_);
  into->swap(pending_);
  flush_due_ = false;
}

// libnghttp2 calls these on the strand, from inside mem_recv and mem_send.
struct H2Session::Callbacks {
  static H2Session* Of(void* user) { return static_cast<H2Session*>(user); }
  static H2Stream* StreamOf(nghttp2_session* h2, int32_t id) {
    return static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(h2, id));
  }

  static int BeginHeaders(nghttp2_session* h2, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    H2Session* h = Of(user);
    auto s = std::make_shared<H2Stream>(h->ctx_, h->weak_from_this(), frame->hd.stream_id);
    nghttp2_session_set_stream_user_data(h2, s->id, s.get());
    h->streams_[s->id] = std::move(s);
    return 0;
  }

  static int Header(nghttp2_session* h2, const nghttp2_frame* frame, const uint8_t* name,
                    size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    H2Stream* s = StreamOf(h2, frame->hd.stream_id);
    if (!s || s->state != H2Stream::State::kReceiving) return 0;
    s->header_bytes += namelen + valuelen + 32;  // as SETTINGS_MAX_HEADER_LIST_SIZE counts
    if (s->header_bytes > Of(user)->ctx_->options.max_header_bytes) {
      s->refusal = 431;
      return 0;
    }
    const std::string_view k(reinterpret_cast<const char*>(name), namelen);
    std::string v(reinterpret_cast<const char*>(value), valuelen);
    Request& r = s->request;
    if (k == ":method") {
      r.method = std::move(v);
    } else if (k == ":path") {
      const size_t q = v.find('?');
      r.path = v.substr(0, q);
      if (q != std::string::npos) r.query = v.substr(q + 1);
    } else if (k == ":authority") {
      r.headers.emplace_back("host", std::move(v));
    } else if (!k.empty() && k[0] != ':') {
      r.headers.emplace_back(std::string(k), std::move(v));  // lower case, as HTTP/2 has them
    }
    return 0;
  }

  static int DataChunk(nghttp2_session* h2, uint8_t, int32_t id, const uint8_t* data, size_t len,
                       void* user) {
    H2Stream* s = StreamOf(h2, id);
    if (!s || s->state != H2Stream::State::kReceiving || s->refusal) return 0;
    if (s->request.body.size() + len > Of(user)->ctx_->options.max_body_bytes) {
      s->refusal = 413;
      std::string().swap(s->request.body);
      return 0;
    }
    s->request.body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }

  static int FrameReceived(nghttp2_session* h2, const nghttp2_frame* frame, void* user) {
    const bool request_part = frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA;
    if (!request_part || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    H2Stream* s = StreamOf(h2, frame->hd.stream_id);
    if (s && s->state == H2Stream::State::kReceiving) Of(user)->Dispatch(s);
    return 0;
  }

  static int StreamClose(nghttp2_session*, int32_t id, uint32_t, void* user) {
    Of(user)->StreamClosed(id);
    return 0;
  }

  // The answer's bytes as DATA: what the stream has; deferred while it waits for more.
  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                          nghttp2_data_source* source, void*) {
    auto* s = static_cast<H2Stream*>(source->ptr);
    size_t n = 0;
    while (n < length && !s->out.empty()) {
      const std::string& piece = *s->out.front();
      const size_t take = std::min(length - n, piece.size() - s->out_offset);
      std::memcpy(buf + n, piece.data() + s->out_offset, take);
      n += take;
      s->out_offset += take;
      if (s->out_offset == piece.size()) {
        s->out.pop_front();
        s->out_offset = 0;
      }
    }
    s->Written(n);
    if (s->out.empty() && s->end_queued) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      s->state = H2Stream::State::kEnded;
      return static_cast<ssize_t>(n);
    }
    return n == 0 ? ssize_t{NGHTTP2_ERR_DEFERRED} : static_cast<ssize_t>(n);
  }
};

H2Session::H2Session(Context* ctx, TlsStream stream, std::string peer, std::string cn,
                     std::vector<std::string> orgs)
    : ctx_(ctx),
      stream_(std::move(stream)),
      peer_(std::move(peer)),
      cn_(std::move(cn)),
      orgs_(std::move(orgs)) {
  ctx_->connections.fetch_add(1);
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, Callbacks::BeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cb, Callbacks::Header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, Callbacks::DataChunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, Callbacks::FrameReceived);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, Callbacks::StreamClose);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  nghttp2_option_set_max_send_header_block_length(opt, 256 << 10);
  nghttp2_session_server_new2(&h2_, cb, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
}

H2Session::~H2Session() {
  if (h2_) nghttp2_session_del(h2_);
  ctx_->connections.fetch_sub(1);
}

void H2Session::Run() {
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kMaxStreams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<uint32_t>(ctx_->options.max_header_bytes)},
  };
  if (!h2_ || nghttp2_submit_settings(h2_, NGHTTP2_FLAG_NONE, settings, std::size(settings)) != 0) {
    return Close();
  }
  // The connection's window as large as its streams' together may use at once.
  nghttp2_session_set_local_window_size(h2_, NGHTTP2_FLAG_NONE, 0, 16 << 20);
  in_.resize(kReadBuffer);
  Pump();
  Read();
}

void H2Session::Read() {
  if (closed_) return;
  // An idle connection closes after idle_timeout; one with streams open waits for as long as
  // they last (a watch is quiet from the client's side).
  if (streams_.empty()) {
    stream_.expires_after(ctx_->options.idle_timeout);
  } else {
    stream_.expires_never();
  }
  auto self = std::static_pointer_cast<H2Session>(shared_from_this());
  stream_.async_read_some(net::buffer(in_), [self](beast::error_code ec, size_t n) {
    if (ec || self->closed_) return self->Close();
    const auto* data = reinterpret_cast<const uint8_t*>(self->in_.data());
    self->receiving_ = true;  // what the callbacks answer is sent after, by the Pump below
    const ssize_t used = nghttp2_session_mem_recv(self->h2_, data, n);
    self->receiving_ = false;
    if (used < 0) return self->Close();
    self->Pump();
    self->Read();
  });
}

// What nghttp2 has to send goes out, one write of the socket at a time.
void H2Session::Pump() {
  if (writing_ || closed_ || receiving_) return;
  ssize_t n = 0;
  const uint8_t* data = nullptr;
  while (out_.size() < kWriteHighWater && (n = nghttp2_session_mem_send(h2_, &data)) > 0) {
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  if (n < 0) return Close();
  if (out_.empty()) {
    if (!nghttp2_session_want_read(h2_) && !nghttp2_session_want_write(h2_)) Close();
    return;
  }
  writing_ = true;
  auto self = std::static_pointer_cast<H2Session>(shared_from_this());
  net::async_write(stream_, net::buffer(out_), [self](beast::error_code ec, size_t) {
    self->writing_ = false;
    std::string().swap(self->out_);  // an idle connection keeps no buffer
    if (ec) return self->Close();
    self->Pump();
  });
}

void H2Session::Dispatch(H2Stream* s) {
  s->state = H2Stream::State::kAnswering;
  if (s->refusal) {
    const int status = s->refusal;
    const std::string message =
        status == 413 ? fmt::format("the request body is larger than the limit of {} bytes",
                                    ctx_->options.max_body_bytes)
                      : std::string("the request's headers are too large");
    return Answer(s,
                  ctx_->options.error_response
                      ? ctx_->options.error_response(status, message)
                      : Response{.status = status, .content_type = "text/plain", .body = message});
  }
  Request req = std::move(s->request);
  req.client_cn = cn_;
  req.client_orgs = orgs_;
  req.peer = peer_;
  ctx_->handler(std::move(req), std::make_shared<H2Exchange>(s->weak_from_this(),
                                                             ctx_->options.max_stream_backlog));
}

bool H2Session::Submit(H2Stream* s, int status, const std::string& content_type,
                       const std::vector<std::pair<std::string, std::string>>& headers,
                       std::optional<size_t> length) {
  std::vector<std::pair<std::string, std::string>> fields = {{":status", std::to_string(status)},
                                                             {"content-type", content_type}};
  bool cache_control = false;
  for (const auto& [k, v] : headers) {
    std::string name = absl::AsciiStrToLower(k);
    if (ConnectionSpecific(name) || name == "content-type" || name == "content-length") continue;
    cache_control |= name == "cache-control";
    fields.emplace_back(std::move(name), v);
  }
  if (!cache_control) fields.emplace_back("cache-control", "no-cache, private");
  if (length) fields.emplace_back("content-length", std::to_string(*length));
  std::vector<nghttp2_nv> nv;
  nv.reserve(fields.size());
  for (auto& [k, v] : fields) {
    nv.push_back({reinterpret_cast<uint8_t*>(k.data()), reinterpret_cast<uint8_t*>(v.data()),
                  k.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider body{};
  body.source.ptr = s;
  body.read_callback = Callbacks::ReadBody;
  const bool empty = length && *length == 0;
  return nghttp2_submit_response(h2_, s->id, nv.data(), nv.size(), empty ? nullptr : &body) == 0;
}

void H2Session::Answer(H2Stream* s, Response r) {
  if (closed_ || s->state != H2Stream::State::kAnswering) return;
  const size_t length = r.body.size();
  if (length > 0) {
    s->backlog.fetch_add(length);  // counted down as DATA frames take it
    s->out.push_back(std::make_shared<const std::string>(std::move(r.body)));
  }
  s->end_queued = true;
  s->state = length > 0 ? H2Stream::State::kStreaming : H2Stream::State::kEnded;
  if (!Submit(s, r.status, r.content_type, r.headers, length)) {
    nghttp2_submit_rst_stream(h2_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
  }
  Pump();
}

void H2Session::Begin(H2Stream* s, int status, std::string content_type) {
  if (closed_ || s->state != H2Stream::State::kAnswering) return;
  s->state = H2Stream::State::kStreaming;
  if (!Submit(s, status, content_type, {}, std::nullopt)) {
    nghttp2_submit_rst_stream(h2_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
  }
  Pump();
}

// A round reached the stream: what its handler wrote joins what the client is to be sent.
void H2Session::Flush(H2Stream* s) {
  std::vector<std::pair<Piece, bool>> pieces;
  s->TakePending(&pieces);
  size_t dropped = 0;
  for (auto& [piece, end] : pieces) {
    const bool open = s->state == H2Stream::State::kStreaming && !s->end_queued;
    if (!open) {
      dropped += piece ? piece->size() : 0;
    } else if (end) {
      s->end_queued = true;
    } else if (piece && !piece->empty()) {
      s->out.push_back(std::move(piece));
    }
  }
  s->Written(dropped);
  if (closed_ || s->state != H2Stream::State::kStreaming) return;
  nghttp2_session_resume_data(h2_, s->id);
  Pump();
}

void H2Session::OnClose(H2Stream* s, std::function<void()> f) {
  if (s->state == H2Stream::State::kClosed) return f();
  s->on_close = std::move(f);
}

void H2Session::StreamClosed(int32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  std::shared_ptr<H2Stream> s = std::move(it->second);
  streams_.erase(it);
  const bool ended = s->state == H2Stream::State::kEnded;
  s->state = H2Stream::State::kClosed;
  s->gone.store(true);
  s->Written(s->backlog.load());
  s->Drained();
  s->out.clear();
  if (auto f = std::move(s->on_close); f && !ended) f();
}

void H2Session::Close() {
  if (closed_) return;
  closed_ = true;
  gone.store(true);
  Drained();
  auto streams = std::exchange(streams_, {});
  for (auto& [id, s] : streams) {
    const bool ended = s->state == H2Stream::State::kEnded;
    s->state = H2Stream::State::kClosed;
    s->gone.store(true);
    s->Drained();
    if (auto f = std::move(s->on_close); f && !ended) f();
  }
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
}

void H2Session::Detach() {
  Flow::Detach();
  for (auto& [id, s] : streams_) s->Detach();  // (the server's threads have stopped)
}

}  // namespace mkube::http::detail
