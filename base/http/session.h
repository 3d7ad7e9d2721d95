#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <cstring>
#include <deque>

#include "absl/strings/ascii.h"
#include "base/http/flow.h"
#include "base/http/h2_session.h"
#include "base/http/tls_stream.h"
#include "base/http/websocket_session.h"
#include "fmt/format.h"

// An HTTP/1.1 connection of the server (internal to base/http): reads requests in turn, hands
// each to the handler with an Exchange, writes the answer (whole or chunked), and becomes a
// WebSocket when the handler accepts an upgrade.
namespace mkube::http::detail {

namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

std::string Head(int status, const std::string& content_type,
                 const std::vector<std::pair<std::string, std::string>>& headers, bool keep_alive,
                 std::optional<size_t> length);

// A connection's side of an Exchange: everything runs on the connection's strand. A session
// lives while an operation of its connection is pending, or (`hold`) while a handler owes it
// an answer; Exchanges refer to it weakly, so none outlives its server.
class SessionBase : public Flow, public std::enable_shared_from_this<SessionBase> {
 public:
  void Detach() override {
    hold.reset();
    Flow::Detach();
  }
  std::shared_ptr<SessionBase> hold;
  virtual void Finish(uint64_t seq, Response r) = 0;
  virtual void Start(uint64_t seq, int status, std::string content_type) = 0;
  // From any thread: a piece of a streamed answer (or, `end`, its end) for the next round;
  // false when the client is gone or has more than `limit` bytes waiting.
  virtual bool Enqueue(uint64_t seq, Piece piece, size_t limit, bool end) = 0;
  virtual void OnClose(uint64_t seq, std::function<void()> f) = 0;
  virtual void Upgrade(uint64_t seq, std::string subprotocol,
                       std::function<WebSocketHandlers(WebSocketPtr)> open) = 0;
};

class ExchangeImpl final : public Exchange {
 public:
  ExchangeImpl(std::weak_ptr<SessionBase> s, uint64_t seq, size_t max_backlog)
      : s_(std::move(s)), seq_(seq), max_backlog_(max_backlog) {}
  void Finish(Response r) override {
    if (auto s = s_.lock()) {
      s->Post([s, seq = seq_, r = std::move(r)]() mutable { s->Finish(seq, std::move(r)); });
    }
  }
  void Start(int status, std::string content_type) override {
    if (auto s = s_.lock()) {
      s->Post([s, seq = seq_, status, ct = std::move(content_type)]() mutable {
        s->Start(seq, status, std::move(ct));
      });
    }
  }
  bool Write(std::string chunk) override {
    return Write(std::make_shared<const std::string>(std::move(chunk)));
  }
  bool Write(Piece piece) override {
    auto s = s_.lock();
    return s && s->Enqueue(seq_, std::move(piece), max_backlog_, false);
  }
  bool WriteWaiting(std::string chunk) override {
    auto s = s_.lock();
    if (!s || !s->WaitBelow(max_backlog_)) return false;
    return s->Enqueue(seq_, std::make_shared<const std::string>(std::move(chunk)), SIZE_MAX, false);
  }
  void End() override {
    if (auto s = s_.lock()) s->Enqueue(seq_, nullptr, SIZE_MAX, true);
  }
  void OnClose(std::function<void()> f) override {
    auto s = s_.lock();
    if (!s) return f();
    s->Post([s, seq = seq_, f = std::move(f)]() mutable { s->OnClose(seq, std::move(f)); });
  }
  void AcceptWebSocket(std::string subprotocol,
                       std::function<WebSocketHandlers(WebSocketPtr)> open) override {
    if (auto s = s_.lock()) {
      s->Post([s, seq = seq_, sp = std::move(subprotocol), open = std::move(open)]() mutable {
        s->Upgrade(seq, std::move(sp), std::move(open));
      });
    }
  }

 private:
  std::weak_ptr<SessionBase> s_;
  uint64_t seq_;
  size_t max_backlog_;
};

template <typename Stream>
class Session final : public SessionBase {
 public:
  Session(Context* ctx, Stream stream, std::string peer)
      : ctx_(ctx), stream_(std::move(stream)), peer_(std::move(peer)) {
    ctx_->connections.fetch_add(1);
  }
  ~Session() override { ctx_->connections.fetch_sub(1); }

  void Run() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      Read();
    } else {
      beast::get_lowest_layer(stream_).expires_after(ctx_->options.read_timeout);
      stream_.async_handshake([self = Self()](beast::error_code ec) { self->Handshaken(ec); });
    }
  }

  void Post(std::function<void()> f) override { net::post(stream_.get_executor(), std::move(f)); }

  void Finish(uint64_t seq, Response r) override {
    if (seq != seq_ || state_ != State::kAnswering) return;
    bool cache_control = false;
    for (const auto& [k, v] : r.headers) cache_control |= k == "Cache-Control";
    if (!cache_control) r.headers.emplace_back("Cache-Control", "no-cache, private");
    out_.push_back({nullptr, Head(r.status, r.content_type, r.headers, keep_alive_, r.body.size()), 0});
    if (!r.body.empty()) out_.push_back({nullptr, std::move(r.body), 0});  // not copied
    if (!writing_) WriteNext();
    state_ = keep_alive_ ? State::kReadingNext : State::kClosing;
    hold.reset();  // the write in flight holds the session now
  }

  void Start(uint64_t seq, int status, std::string content_type) override {
    if (seq != seq_ || state_ != State::kAnswering) return;
    // A streamed answer ends the connection: while it runs the connection is watched for
    // the client going away, which reads what would be the next request.
    keep_alive_ = false;
    state_ = State::kStreaming;
    beast::get_lowest_layer(stream_).expires_never();
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      // Its writes go straight to the socket while it has room (see WriteNext): once, not a
      // system call per write.
      beast::error_code ignored;
      beast::get_lowest_layer(stream_).socket().non_blocking(true, ignored);
    }
    Queue(Head(status, content_type, {{"Cache-Control", "no-cache, private"}}, false, std::nullopt));
    WatchForClose();
    hold.reset();  // the read watching for the client's close holds the session now
  }

  bool Enqueue(uint64_t seq, Piece piece, size_t limit, bool end) override {
    const size_t n = piece ? piece->size() : 0;
    {
      std::lock_guard<std::mutex> l(pending_mu_);
      if (gone.load() || backlog.load() > limit) return false;
      backlog.fetch_add(n);  // until the socket has taken it
      pending_.push_back({seq, std::move(piece), end});
      if (flush_due_) return true;
      flush_due_ = true;
    }
    ctx_->Due(shared_from_this());
    return true;
  }

  void PostFlush() override {
    net::post(stream_.get_executor(), [self = Self()] { self->Flush(); });
  }

  // What handlers wrote since the last round goes out as one chunk, then the end if it came.
  void Flush() {
    {
      std::lock_guard<std::mutex> l(pending_mu_);
      flushing_.swap(pending_);  // each keeps its capacity
      flush_due_ = false;
    }
    size_t n = 0, dropped = 0;
    bool end = false;
    for (auto& p : flushing_) {
      const size_t size = p.piece ? p.piece->size() : 0;
      if (p.seq != seq_ || state_ != State::kStreaming || end) {
        dropped += size;
        p.piece.reset();
      } else if (p.end) {
        end = true;
      } else {
        n += size;
      }
    }
    Written(dropped);
    if (n > 0) {
      out_.push_back({nullptr, fmt::format("{:x}\r\n", n), 0});
      for (auto& p : flushing_) {
        if (p.piece && !p.piece->empty()) out_.push_back({std::move(p.piece), {}, 0});
      }
      out_.push_back({nullptr, "\r\n", n});  // the chunk's bytes count once it is all written
    }
    flushing_.clear();
    if (end) {
      out_.push_back({nullptr, "0\r\n\r\n", 0});
      state_ = State::kClosing;
    }
    if (!writing_) WriteNext();
  }

  void OnClose(uint64_t seq, std::function<void()> f) override {
    if (seq != seq_) return;
    if (state_ == State::kClosed) {
      f();
    } else {
      on_close_ = std::move(f);
    }
  }

  // The connection becomes a WebSocket: its stream goes to a session of that kind, this one
  // ends without closing it.
  void Upgrade(uint64_t seq, std::string subprotocol,
               std::function<WebSocketHandlers(WebSocketPtr)> open) override {
    if (seq != seq_ || state_ != State::kAnswering || !upgrade_) return;
    auto ws = std::make_shared<WsSession<Stream>>(ctx_, std::move(stream_));
    ctx_->Register(ws);
    ws->Accept(std::move(*upgrade_), std::move(subprotocol), std::move(open));
    upgrade_.reset();
    state_ = State::kClosed;
    gone.store(true);
    Drained();
    hold.reset();
  }

 private:
  enum class State { kReading, kAnswering, kStreaming, kReadingNext, kClosing, kClosed };

  std::shared_ptr<Session> Self() {
    return std::static_pointer_cast<Session>(shared_from_this());
  }

  void Handshaken(beast::error_code ec) {
    if (ec) return Close();
    if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
      SSL* ssl = stream_.native_handle();
      if (X509* cert = SSL_get1_peer_certificate(ssl)) {
        if (SSL_get_verify_result(ssl) == X509_V_OK) Subject(cert);
        X509_free(cert);
      }
      const unsigned char* proto = nullptr;
      unsigned int len = 0;
      SSL_get0_alpn_selected(ssl, &proto, &len);
      if (len == 2 && std::memcmp(proto, "h2", 2) == 0) {
        // The client chose HTTP/2: the connection goes to a session of that kind.
        auto h2 = std::make_shared<H2Session>(ctx_, std::move(stream_), peer_, cn_, orgs_);
        ctx_->Register(h2);
        h2->Run();
        state_ = State::kClosed;
        gone.store(true);
        return;
      }
    }
    Read();
  }

  void Subject(X509* cert) {
    X509_NAME* name = X509_get_subject_name(cert);
    for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
      X509_NAME_ENTRY* e = X509_NAME_get_entry(name, i);
      const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(e));
      unsigned char* utf8 = nullptr;
      const int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(e));
      if (n < 0) continue;
      std::string value(reinterpret_cast<char*>(utf8), n);
      OPENSSL_free(utf8);
      if (nid == NID_commonName) cn_ = value;
      if (nid == NID_organizationName) orgs_.push_back(value);
    }
  }

  void Read() {
    state_ = State::kReading;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(ctx_->options.max_header_bytes));
    parser_->body_limit(ctx_->options.max_body_bytes);
    beast::get_lowest_layer(stream_).expires_after(requests_ == 0 ? ctx_->options.read_timeout
                                                                  : ctx_->options.idle_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = Self()](beast::error_code ec, size_t) { self->Received(ec); });
  }

  void Received(beast::error_code ec) {
    if (ec) {
      if (ec == bhttp::error::body_limit) {
        return Refuse(413, fmt::format("the request body is larger than the limit of {} bytes",
                                       ctx_->options.max_body_bytes));
      }
      if (ec == bhttp::error::header_limit) {
        return Refuse(431, "the request's headers are too large");
      }
      if (ec == beast::error::timeout && buffer_.size() > 0) {
        return Refuse(408, "the request did not arrive in time");
      }
      if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
          ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
        return Refuse(400, fmt::format("malformed HTTP request: {}", ec.message()));
      }
      return Close();
    }
    ++requests_;
    auto msg = parser_->release();
    parser_.reset();
    keep_alive_ = msg.keep_alive();
    const bool websocket = boost::beast::websocket::is_upgrade(msg);
    Request req;
    req.method = std::string(msg.method_string());
    std::string_view target = msg.target();
    const size_t q = target.find('?');
    req.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
    for (const auto& field : msg) {
      req.headers.emplace_back(absl::AsciiStrToLower(std::string(field.name_string())),
                               std::string(field.value()));
    }
    req.websocket = websocket;
    if (websocket) {
      upgrade_.emplace(msg);  // the handshake answers it (its body is empty)
    } else {
      upgrade_.reset();
    }
    req.body = std::move(msg.body());
    req.client_cn = cn_;
    req.client_orgs = orgs_;
    req.peer = peer_;
    ++seq_;
    state_ = State::kAnswering;
    // The answer may take long (a worker, a store round trip): no read timeout meanwhile, and
    // the session holds itself until it comes.
    beast::get_lowest_layer(stream_).expires_never();
    hold = shared_from_this();
    ctx_->handler(std::move(req), std::make_shared<ExchangeImpl>(weak_from_this(), seq_,
                                                                 ctx_->options.max_stream_backlog));
  }

  void Refuse(int status, const std::string& message) {
    if (state_ == State::kClosed) return;
    keep_alive_ = false;
    state_ = State::kAnswering;
    Finish(seq_, ctx_->options.error_response
                     ? ctx_->options.error_response(status, message)
                     : Response{.status = status, .content_type = "text/plain", .body = message});
  }

  void Queue(std::string bytes) {
    out_.push_back({nullptr, std::move(bytes), 0});
    if (!writing_) WriteNext();
  }

  void WriteNext() {
    for (;;) {
      if (out_.empty()) {
        writing_ = false;
        if (state_ == State::kReadingNext) return Read();
        if (state_ == State::kClosing) return Close();
        return;
      }
      writing_ = true;
      if (state_ != State::kStreaming) {
        beast::get_lowest_layer(stream_).expires_after(ctx_->options.read_timeout);
      }
      const size_t bytes = Gather();
      if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
        // A stream's writes have no deadline: straight to the socket, at once while it has
        // room (a watch's many small writes each cost a completion otherwise), and without
        // the stream's timer bookkeeping.
        if (state_ == State::kStreaming) {
          auto& socket = beast::get_lowest_layer(stream_).socket();
          beast::error_code ec;
          size_t sent = socket.non_blocking() ? socket.write_some(buffers_, ec) : 0;
          if (ec == net::error::would_block) ec = {};
          if (ec) return Close();
          if (sent == bytes) {
            Written(in_flight_counted_);
            continue;
          }
          Consume(sent);
          return net::async_write(socket, buffers_, Done());
        }
      }
      return net::async_write(stream_, buffers_, Done());
    }
  }

  // What has queued up meanwhile goes out in one write, its pieces gathered where they are
  // (a watch's events, shared with every other watcher, are not copied): its size.
  size_t Gather() {
    in_flight_.clear();
    buffers_.clear();
    in_flight_counted_ = 0;
    size_t bytes = 0;
    while (!out_.empty() && (bytes == 0 || bytes + out_.front().size() <= kMaxWrite)) {
      bytes += out_.front().size();
      in_flight_counted_ += out_.front().counted;
      in_flight_.push_back(std::move(out_.front()));
      out_.pop_front();
    }
    for (const auto& p : in_flight_) buffers_.emplace_back(p.data(), p.size());
    return bytes;
  }

  // Drops the first `n` bytes of the write in flight's buffers (they were sent).
  void Consume(size_t n) {
    size_t whole = 0;
    while (whole < buffers_.size() && n >= buffers_[whole].size()) n -= buffers_[whole++].size();
    buffers_.erase(buffers_.begin(), buffers_.begin() + whole);
    if (n > 0) buffers_.front() += n;
  }

  auto Done() {
    return [self = Self()](beast::error_code ec, size_t) {
      // Closed meanwhile (the client went away while this write was queued to complete):
      // the pieces in flight go with the connection.
      if (ec || self->state_ == State::kClosed) return self->Close();
      self->Written(self->in_flight_counted_);
      self->WriteNext();
    };
  }

  // While an answer streams, a read that ends tells the client went away.
  void WatchForClose() {
    stream_.async_read_some(buffer_.prepare(4096), [self = Self()](beast::error_code ec, size_t n) {
      if (ec || self->buffer_.size() + n > 64 * 1024) return self->Close();
      self->buffer_.commit(n);
      if (self->state_ == State::kStreaming) self->WatchForClose();
    });
  }

  void Close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    gone.store(true);
    Drained();
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).close();
    out_.clear();  // (a write in flight keeps its pieces)
    {
      std::lock_guard<std::mutex> l(pending_mu_);
      pending_.clear();
    }
    if (auto f = std::move(on_close_)) f();
    hold.reset();
  }

  Context* ctx_;
  Stream stream_;
  std::string peer_;
  std::string cn_;
  std::vector<std::string> orgs_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  State state_ = State::kReading;
  uint64_t seq_ = 0;
  uint64_t requests_ = 0;
  bool keep_alive_ = true;
  bool writing_ = false;
  // What waits to be written: a shared piece, or bytes of the connection's own.
  struct Pending {
    Piece shared;
    std::string own;
    size_t counted;  // of the backlog, released once it is written
    const char* data() const { return shared ? shared->data() : own.data(); }
    size_t size() const { return shared ? shared->size() : own.size(); }
  };
  std::deque<Pending> out_;
  static constexpr size_t kMaxWrite = 256 << 10;
  std::vector<Pending> in_flight_;  // what the write in flight sends
  std::vector<net::const_buffer> buffers_;
  size_t in_flight_counted_ = 0;  // of the backlog
  // Pieces handlers wrote (from any thread) for the next round.
  struct PendingPiece {
    uint64_t seq;
    Piece piece;
    bool end;
  };
  std::mutex pending_mu_;
  std::vector<PendingPiece> pending_;
  bool flush_due_ = false;
  std::vector<PendingPiece> flushing_;  // the round's, on the strand
  std::function<void()> on_close_;
  // The request of a websocket upgrade, until its handler answers it.
  std::optional<bhttp::request<bhttp::string_body>> upgrade_;
};


}  // namespace mkube::http::detail
