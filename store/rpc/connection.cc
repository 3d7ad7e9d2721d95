#include "store/rpc/connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/log.h"
#include "fmt/format.h"
#include "store/rpc/loop.h"

namespace mkube::store::rpc {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("rpc");
  return logger;
}

// Framed output the client has not taken past which its input is no longer read (whatever
// asked for the output: answers, acks, refusals), until half of it is gone. Answers beyond it
// wait unframed (kOutputHighWater), bounded by the streams a connection may open.
constexpr size_t kReadPause = kOutputHighWater;

uint32_t Read32(const char* p) {
  const auto* u = reinterpret_cast<const uint8_t*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}

}  // namespace

std::string PercentEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e || c == '%') {
      out += fmt::format("%{:02X}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string NewFrame(size_t size) {
  std::string out(5 + size, '\0');
  out[1] = static_cast<char>(size >> 24);
  out[2] = static_cast<char>(size >> 16);
  out[3] = static_cast<char>(size >> 8);
  out[4] = static_cast<char>(size);
  return out;
}

std::string FrameMessage(const google::protobuf::MessageLite& message) {
  std::string out = NewFrame(message.ByteSizeLong());
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + 5));
  return out;
}

void Connection::Dirty() { loop_->MarkDirty(this); }

void Connection::OnReadable() {
  if (read_paused_) {  // only an error or the peer's end gets here: nothing is read now
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) Close();
    return;
  }
  for (int round = 0; round < 8 && !closed_; ++round) {
    char* buf = loop_->read_buffer();
    const ssize_t n = ::recv(fd_, buf, loop_->read_buffer_size(), 0);
    if (n == 0) {
      Close();
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) Close();
      break;
    }
    std::string_view data(buf, n);
    if (tls_ && !Decrypt(&data)) return;
    if (!Receive(data)) return;
    // What the input asked for without reading it: ping and settings acks, refusals. (Only
    // the frames: an answer larger than the limit, sent while its client reads, is allowed.)
    if (OverLimit(Unsent())) return;
    if (Unsent() > kReadPause) {
      read_paused_ = true;
      Dirty();  // its Flush takes the connection out of reading until the output drains
      break;
    }
    if (static_cast<size_t>(n) < loop_->read_buffer_size()) break;
  }
  if (tls_ && tls_->closed()) Close();  // the client's close_notify, after what came before it
}

bool Connection::Decrypt(std::string_view* data) {
  const bool was_ready = tls_->ready();
  plain_.clear();
  if (absl::Status st = tls_->Receive(*data, &plain_); !st.ok()) {
    loop_->TlsFailed(st);
    Close();
    return false;
  }
  // Handshake messages to send, or the frames queued since Open to encrypt now.
  if (tls_->output().size() > wire_pos_ || (!was_ready && tls_->ready())) Dirty();
  *data = plain_;
  return true;
}

bool Connection::Encrypt() {
  if (!tls_->ready() || out_pos_ == out_.size()) return true;
  if (absl::Status st = tls_->Send(std::string_view(out_).substr(out_pos_)); !st.ok()) {
    loop_->TlsFailed(st);
    Close();
    return false;
  }
  out_.clear();
  out_pos_ = 0;
  return true;
}

std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value) {
  using namespace std::chrono;
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  int64_t n = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  switch (value.back()) {
    case 'H':
      return duration_cast<nanoseconds>(hours(n));
    case 'M':
      return duration_cast<nanoseconds>(minutes(n));
    case 'S':
      return duration_cast<nanoseconds>(seconds(n));
    case 'm':
      return duration_cast<nanoseconds>(milliseconds(n));
    case 'u':
      return duration_cast<nanoseconds>(microseconds(n));
    case 'n':
      return nanoseconds(n);
    default:
      return std::nullopt;
  }
}

bool Connection::Fail(ErrorCode code, std::string_view why) {
  Log().debug("connection error {}: {}", static_cast<int>(code), why);
  SendGoAway(code, why);
  Flush();
  Close();
  return false;
}

void Connection::RequestHeaders::Add(std::string_view name, std::string_view value) {
  list_size += name.size() + value.size() + 32;
  if (name == ":method") {
    method.assign(value);
  } else if (name == ":path") {
    path.assign(value);
  } else if (name == "content-type") {
    content_type.assign(value);
  } else if (name == "grpc-encoding" && value != "identity") {
    encoding.assign(value);
  } else if (name == "grpc-timeout") {
    timeout.assign(value);
  }
}

void Connection::StartCall(uint32_t id, RequestHeaders& h) {
  if (going_away_) {
    Reset(id, kRefusedStream);
    return;
  }
  if (h.list_size > kMaxHeaderList) {
    Answer(id, absl::ResourceExhaustedError("header list too large"));
    return;
  }
  if (!h.content_type.starts_with("application/grpc")) {
    ReplyHttpError(id, "415", nullptr);
    return;
  }
  if (h.method != "POST") {  // as gRPC's servers answer it
    const absl::Status why = absl::InternalError(
        fmt::format("Received a HEADERS frame with :method \"{}\" which should be POST", h.method));
    ReplyHttpError(id, "405", &why);
    return;
  }
  auto m = loop_->methods().find(h.path);
  if (m == loop_->methods().end()) {
    Answer(id, absl::UnimplementedError(fmt::format("unknown method {}", h.path)));
    return;
  }
  std::optional<std::chrono::nanoseconds> deadline;
  if (!h.timeout.empty() && !(deadline = ParseGrpcTimeout(h.timeout))) {
    Answer(id, absl::InternalError(fmt::format("malformed grpc-timeout: {}", h.timeout)));
    return;
  }
  if (deadline) loop_->AddDeadline(std::chrono::steady_clock::now() + *deadline, this, id);
  Stream& s = streams_[id];
  s.method = &m->second;
  s.encoding = std::move(h.encoding);
  if (s.method->stream) {
    s.server = std::make_shared<ServerStream>(shared_from_this(), id);
    s.handler = s.method->stream(s.server);
  }
}

void Connection::HalfClose(uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream& t = it->second;
  if (!t.in.empty()) {
    Answer(id, absl::InternalError("the request ends inside a message"));
  } else if (t.handler) {
    t.handler->OnHalfClose();
  } else if (!t.dispatched && !t.waiting) {
    Answer(id, absl::InternalError("the request has no message"));
  }
}

void Connection::OnMessages(uint32_t id, Stream& s, std::string_view data) {
  std::string_view in = data;
  if (!s.in.empty()) {
    s.in.append(data);
    Buffered(static_cast<int64_t>(data.size()));
    in = s.in;
  }
  size_t pos = 0;
  while (in.size() - pos >= 5) {
    const uint8_t compressed = static_cast<uint8_t>(in[pos]);
    const uint32_t len = Read32(in.data() + pos + 1);
    if (len > loop_->max_message()) {
      Answer(id, absl::ResourceExhaustedError(fmt::format(
                     "grpc: received message larger than max ({} vs. {})", len,
                     loop_->max_message())));
      return;
    }
    // As gRPC's servers answer: an encoding it cannot decode is UNIMPLEMENTED; the flag
    // without an encoding is the client's error, INTERNAL.
    if (!s.encoding.empty()) {
      Answer(id, absl::UnimplementedError(fmt::format(
                     "grpc: Decompressor is not installed for grpc-encoding \"{}\"", s.encoding)));
      return;
    }
    if (compressed != 0) {
      Answer(id, absl::InternalError("grpc: compressed flag set with identity or empty encoding"));
      return;
    }
    if (in.size() - pos - 5 < len) break;
    const std::string_view message = in.substr(pos + 5, len);
    pos += 5 + len;
    if (s.handler) {
      s.handler->OnMessage(message);
      if (!streams_.contains(id)) return;
    } else if (s.dispatched || s.waiting) {
      Answer(id, absl::InternalError("a unary call with more than one request message"));
      return;
    } else if (waiting_.empty() && !CallsWait()) {
      Begin(id, s, message);
    } else {
      s.waiting = true;
      s.request.assign(message);
      waiting_.push_back(id);
      if (Buffered(static_cast<int64_t>(message.size())) ||
          partial_bytes_ > loop_->max_connection_partial()) {
        Answer(id, absl::ResourceExhaustedError(fmt::format(
                       "grpc: too many bytes of requests waiting ({} on this connection)",
                       partial_bytes_)));
        return;
      }
    }
  }
  bool over = false;
  if (pos == in.size()) {
    Buffered(-static_cast<int64_t>(s.in.size()));
    s.in.clear();
  } else if (s.in.empty()) {
    s.in.assign(in.substr(pos));
    over = Buffered(static_cast<int64_t>(s.in.size()));
  } else {
    s.in.erase(0, pos);
    over = Buffered(-static_cast<int64_t>(pos));
  }
  // The call whose message takes the partly received bytes over a limit ends; the others go
  // on (with this connection's buffers freed of it).
  if (!s.in.empty() && (over || partial_bytes_ > loop_->max_connection_partial())) {
    Answer(id, absl::ResourceExhaustedError(fmt::format(
                   "grpc: too many bytes of partly received messages ({} on this connection)",
                   partial_bytes_)));
  }
}

void Connection::Begin(uint32_t id, Stream& s, std::string_view request) {
  s.dispatched = true;
  ++calls_begun_;
  loop_->in_flight().fetch_add(1, std::memory_order_relaxed);
  loop_->DispatchUnary(s.method, request, Responder(shared_from_this(), id));
}

bool Connection::CallsWait() {
  const size_t posted = answers_posted_.load(std::memory_order_relaxed);
  const size_t owed = calls_begun_ > posted ? calls_begun_ - posted : 0;
  const size_t expected =
      replies_posted_.load(std::memory_order_relaxed) + replies_pending_ + owed * reply_average_;
  if (calls_wait_ ? expected <= kAnswersHighWater / 2 : expected > kAnswersHighWater) {
    calls_wait_ = !calls_wait_;
  }
  return calls_wait_;
}

void Connection::BeginWaiting() {
  while (!waiting_.empty() && !closed_ && !CallsWait()) {
    const uint32_t id = waiting_.front();
    waiting_.pop_front();
    Stream& s = streams_.at(id);  // Forget takes a call out of waiting_
    s.waiting = false;
    const std::string request = std::move(s.request);
    Buffered(-static_cast<int64_t>(request.size()));
    Begin(id, s, request);
  }
}

bool Connection::Buffered(int64_t delta) {
  partial_bytes_ = static_cast<size_t>(static_cast<int64_t>(partial_bytes_) + delta);
  return loop_->AddPartial(delta);
}

void Connection::Expire(uint32_t id) {
  if (!streams_.contains(id)) return;
  Answer(id, absl::DeadlineExceededError("context deadline exceeded"));
}

void Connection::Forget(uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream s = std::move(it->second);
  streams_.erase(it);
  if (!s.in.empty()) Buffered(-static_cast<int64_t>(s.in.size()));
  if (s.waiting) {
    Buffered(-static_cast<int64_t>(s.request.size()));
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
  }
  size_t unframed = 0;
  for (const std::string& m : s.pending) {
    pending_bytes_ -= m.size() + kQueuedMessageCost;
    unframed += m.size();
  }
  pending_bytes_ += s.pending_offset;  // already framed
  ReplyGone(s, unframed - s.pending_offset);
  if (!waiting_.empty() && !closed_) Dirty();  // answers dropped: calls waiting may begin
  if (s.dispatched) loop_->in_flight().fetch_sub(1, std::memory_order_relaxed);
  if (s.handler) s.handler->OnClose();
}

void Connection::NotifyDrained(Stream& s) {
  if (s.server && s.server->armed_.load(std::memory_order_acquire) &&
      s.server->queued_bytes() <= s.server->low_ &&
      s.server->armed_.exchange(false, std::memory_order_acq_rel)) {
    s.server->drained_();
  }
}

void Connection::PumpBlocked() {
  if (blocked_.empty()) return;
  std::vector<uint32_t> ids;
  ids.swap(blocked_);
  for (uint32_t id : ids) {
    auto it = streams_.find(id);
    if (it == streams_.end()) continue;
    it->second.blocked = false;
    Pump(id, it->second);
  }
}

bool Connection::OverLimit(size_t backlog) {
  if (backlog <= loop_->max_connection_backlog()) return false;
  Fail(kEnhanceYourCalm, "the client leaves too much output unread");
  return true;
}

void Connection::Overflow(uint32_t id, Stream& s) {
  Log().debug("stream {} has {} messages waiting; ending it", id, s.pending.size());
  if (s.pending_offset == 0) {
    // Trailers may follow whole messages; the waiting ones are dropped with the stream.
    Answer(id, absl::ResourceExhaustedError("grpc: the stream's send queue is full"));
  } else {
    Reset(id, kEnhanceYourCalm);  // a message is half sent: nothing more can follow it
  }
}

void Connection::Deliver(Outgoing& o) {
  if (o.kind == Outgoing::kReply) {
    replies_posted_.fetch_sub(o.data.size(), std::memory_order_relaxed);
    reply_average_ =
        reply_average_ == 0 ? o.data.size() : (7 * reply_average_ + o.data.size()) / 8;
  }
  auto it = streams_.find(o.stream);
  if (it == streams_.end()) return;  // the client is gone or reset the call
  Stream& s = it->second;
  if (s.finish_pending) return;
  if (o.kind == Outgoing::kReply || o.kind == Outgoing::kMessage) {
    // The queues' limits (ServerOptions); both are checked before the message is added, so
    // one large message still goes to a queue below them.
    if (OverLimit(Backlog())) return;
    if (s.pending.size() >= loop_->max_stream_messages()) {
      Overflow(o.stream, s);
      return;
    }
    pending_bytes_ += o.data.size() + kQueuedMessageCost;
    if (!s.server) replies_pending_ += o.data.size();
    backlog_peak_ = std::max(backlog_peak_, Backlog());
  }
  switch (o.kind) {
    case Outgoing::kReply:
      s.pending.push_back(std::move(o.data));
      s.finish_pending = true;
      s.final_status = absl::OkStatus();
      break;
    case Outgoing::kMessage:
      s.pending.push_back(std::move(o.data));
      break;
    case Outgoing::kFinish:
      if (!o.status.ok()) {  // an error drops the messages not begun and ends the call now
        Answer(o.stream, o.status);
        return;
      }
      s.finish_pending = true;
      s.final_status = std::move(o.status);
      break;
    default:
      return;
  }
  if (!s.blocked) Pump(o.stream, s);
}

void Connection::GoAway() {
  if (going_away_ || closed_) return;
  going_away_ = true;
  SendGoAway(kNoError, "");
  Dirty();
}

void Connection::Flush() {
  if (!closed_) TakeFrames();
  if (closed_ || (tls_ && !Encrypt())) return;
  // What goes on the socket: the frames, or with TLS their records.
  std::string& wire = tls_ ? tls_->output() : out_;
  size_t& pos = tls_ ? wire_pos_ : out_pos_;
  while (!closed_ && pos < wire.size()) {
    const ssize_t n = ::send(fd_, wire.data() + pos, wire.size() - pos, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Close();
      return;
    }
    pos += n;
  }
  if (closed_) return;
  const bool rest = pos < wire.size();
  if (!rest) {
    // A burst's buffer is not kept by a connection that may stay idle for hours.
    if (wire.capacity() > (256 << 10)) {
      std::string().swap(wire);
    } else {
      wire.clear();
    }
    pos = 0;
  } else if (pos > (256 << 10)) {
    wire.erase(0, pos);
    pos = 0;
  }
  if (read_paused_ && Unsent() <= kReadPause / 2) read_paused_ = false;
  const uint32_t events =
      (read_paused_ ? 0u : uint32_t{EPOLLIN}) | (rest ? uint32_t{EPOLLOUT} : 0u);
  if (events != events_) {
    events_ = events;
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = this;
    epoll_ctl(loop_->epoll_fd(), EPOLL_CTL_MOD, fd_, &ev);
  }
  // Room again below the high water: streams held back by it go on (what they frame marks
  // the connection dirty again).
  if (!blocked_.empty() && Unsent() <= kOutputHighWater / 2) PumpBlocked();
  // Answers framed or dropped: calls waiting for them may begin.
  if (!waiting_.empty()) BeginWaiting();
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  epoll_ctl(loop_->epoll_fd(), EPOLL_CTL_DEL, fd_, nullptr);
  ::close(fd_);
  fd_ = -1;
  std::vector<uint32_t> ids;
  for (auto& [id, s] : streams_) ids.push_back(id);
  for (uint32_t id : ids) Forget(id);
  std::string().swap(out_);
  if (backlog_peak_ >= kReleaseAfter) loop_->ReleaseMemorySoon();
  loop_->Retire(shared_from_this());
}

}  // namespace mkube::store::rpc
