#include "store/rpc/connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "api/log.h"
#include "fmt/format.h"
#include "store/rpc/loop.h"

namespace mkube::store::rpc {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("rpc");
  return logger;
}

// Frame types, flags and settings of RFC 9113.
enum FrameType : uint8_t {
  kData = 0,
  kHeaders = 1,
  kPriority = 2,
  kRstStream = 3,
  kSettings = 4,
  kPushPromise = 5,
  kPing = 6,
  kGoaway = 7,
  kWindowUpdate = 8,
  kContinuation = 9,
};
constexpr uint8_t kEndStream = 0x1;
constexpr uint8_t kAck = 0x1;
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint8_t kPadded = 0x8;
constexpr uint8_t kPriorityFlag = 0x20;
enum SettingId : uint16_t {
  kHeaderTableSize = 1,
  kEnablePush = 2,
  kMaxConcurrentStreams = 3,
  kInitialWindowSize = 4,
  kMaxFrameSize = 5,
  kMaxHeaderListSize = 6,
};

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kFrameHeader = 9;
constexpr int64_t kMaxWindow = 0x7fffffff;
// Framed output the client has not taken past which its input is no longer read (whatever
// asked for the output: answers, acks, refusals), until half of it is gone. Answers beyond it
// wait unframed (kOutputHighWater), bounded by the streams a connection may open.
constexpr size_t kReadPause = kOutputHighWater;
// PING and SETTINGS acks waiting to be written past which the connection is closed (GOAWAY
// ENHANCE_YOUR_CALM): a client that sends them and does not read is flooding.
constexpr size_t kMaxQueuedAcks = 1000;

uint32_t Read32(const char* p) {
  const auto* u = reinterpret_cast<const uint8_t*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}

void Append32(std::string* out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out->append(b, 4);
}

void AppendFrameHeader(std::string* out, size_t length, uint8_t type, uint8_t flags,
                       uint32_t stream) {
  const char b[5] = {static_cast<char>(length >> 16), static_cast<char>(length >> 8),
                     static_cast<char>(length), static_cast<char>(type),
                     static_cast<char>(flags)};
  out->append(b, 5);
  Append32(out, stream & 0x7fffffff);
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

namespace {

const std::string& ResponseHeaders() {
  static const auto* block = [] {
    auto* b = new std::string("\x88");  // :status 200 (static index 8)
    hpack::EncodeLiteral(31, "application/grpc", b);  // content-type (static index 31)
    return b;
  }();
  return *block;
}

void AppendStatus(const absl::Status& st, std::string* block) {
  if (st.ok()) {
    hpack::EncodeLiteral("grpc-status", "0", block);
    return;
  }
  hpack::EncodeLiteral("grpc-status", std::to_string(static_cast<int>(st.code())), block);
  if (!st.message().empty()) {
    hpack::EncodeLiteral("grpc-message", PercentEncode(std::string(st.message())), block);
  }
}

}  // namespace

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

void Connection::Open() {
  if (loop_->nghttp2()) {
    NgOpen();
    return;
  }
  // Our SETTINGS, then room for the connection to send kConnWindow unacknowledged.
  std::string settings;
  auto add = [&](uint16_t id, uint32_t value) {
    settings.push_back(static_cast<char>(id >> 8));
    settings.push_back(static_cast<char>(id));
    Append32(&settings, value);
  };
  add(kMaxConcurrentStreams, loop_->max_streams());
  add(kInitialWindowSize, kStreamWindow);
  add(kMaxHeaderListSize, kMaxHeaderList);
  AppendFrameHeader(&out_, settings.size(), kSettings, 0, 0);
  out_ += settings;
  AppendFrameHeader(&out_, 4, kWindowUpdate, 0, 0);
  Append32(&out_, kConnWindow - kDefaultWindow);
  Dirty();
}

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
    if (ng_) {
      if (!NgReceive(data)) return;
    } else if (in_.empty()) {
      const size_t used = Process(data);
      if (closed_) return;
      in_.assign(data.substr(used));
    } else {
      in_.append(data);
      const size_t used = Process(in_);
      if (closed_) return;
      in_.erase(0, used);
    }
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
  if (!closed_ && !ng_) SendWindowUpdates(0, nullptr);
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

size_t Connection::Process(std::string_view in) {
  size_t pos = 0;
  if (!preface_seen_) {
    const size_t n = std::min(in.size(), kPreface.size());
    if (in.substr(0, n) != kPreface.substr(0, n)) {
      Log().debug("not an HTTP/2 client; closing");
      Close();
      return 0;
    }
    if (n < kPreface.size()) return 0;
    preface_seen_ = true;
    pos = kPreface.size();
  }
  while (!closed_ && in.size() - pos >= kFrameHeader) {
    const auto* h = reinterpret_cast<const uint8_t*>(in.data() + pos);
    const size_t length = (size_t{h[0]} << 16) | (size_t{h[1]} << 8) | h[2];
    if (length > kDefaultFrameSize) {
      Fail(kFrameSizeError, "frame larger than SETTINGS_MAX_FRAME_SIZE");
      return pos;
    }
    if (in.size() - pos < kFrameHeader + length) break;
    const uint32_t id = Read32(in.data() + pos + 5) & 0x7fffffff;
    if (!OnFrame(h[3], h[4], id, in.substr(pos + kFrameHeader, length))) return pos;
    pos += kFrameHeader + length;
  }
  return pos;
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

std::string RefusalFrames(std::string_view why) {
  std::string out;
  AppendFrameHeader(&out, 0, kSettings, 0, 0);  // every server connection starts with one
  AppendFrameHeader(&out, 8 + why.size(), kGoaway, 0, 0);
  Append32(&out, 0);
  Append32(&out, kEnhanceYourCalm);
  out.append(why);
  return out;
}

bool Connection::Fail(ErrorCode code, std::string_view why) {
  Log().debug("connection error {}: {}", static_cast<int>(code), why);
  if (ng_) {
    NgGoAway(code, why);
    Flush();
    Close();
    return false;
  }
  AppendFrameHeader(&out_, 8 + why.size(), kGoaway, 0, 0);
  Append32(&out_, last_stream_);
  Append32(&out_, code);
  out_.append(why);
  Flush();
  Close();
  return false;
}

// Strips padding (and a HEADERS frame's priority fields) from a payload.
static bool Unpad(uint8_t flags, bool priority, std::string_view* payload) {
  if (flags & kPadded) {
    if (payload->empty()) return false;
    const size_t pad = static_cast<uint8_t>((*payload)[0]);
    payload->remove_prefix(1);
    if (pad > payload->size()) return false;
    payload->remove_suffix(pad);
  }
  if (priority) {
    if (payload->size() < 5) return false;
    payload->remove_prefix(5);
  }
  return true;
}

bool Connection::OnFrame(uint8_t type, uint8_t flags, uint32_t id, std::string_view payload) {
  if (continuing_ != 0 && (type != kContinuation || id != continuing_)) {
    return Fail(kProtocolError, "expected CONTINUATION");
  }
  switch (type) {
    case kData:
      return OnDataFrame(id, flags, payload);
    case kHeaders: {
      if (id == 0 || !Unpad(flags, flags & kPriorityFlag, &payload)) {
        return Fail(kProtocolError, "malformed HEADERS");
      }
      if (!(flags & kEndHeaders)) {
        continuing_ = id;
        continuing_end_stream_ = flags & kEndStream;
        header_block_.assign(payload);
        return true;
      }
      return OnHeaders(id, payload, flags & kEndStream);
    }
    case kContinuation: {
      if (continuing_ == 0) return Fail(kProtocolError, "unexpected CONTINUATION");
      header_block_.append(payload);
      if (header_block_.size() > kMaxHeaderList * 2) {
        return Fail(kProtocolError, "header block too large");
      }
      if (!(flags & kEndHeaders)) return true;
      continuing_ = 0;
      std::string block = std::move(header_block_);
      header_block_.clear();
      return OnHeaders(id, block, continuing_end_stream_);
    }
    case kPriority:  // deprecated, and ignored, but still checked (RFC 9113 6.3)
      if (id == 0) return Fail(kProtocolError, "PRIORITY on stream 0");
      if (payload.size() != 5) Reset(id, kFrameSizeError);
      return true;
    case kRstStream:
      if (id == 0 || payload.size() != 4) return Fail(kProtocolError, "malformed RST_STREAM");
      Forget(id);
      return true;
    case kSettings:
      if (id != 0) return Fail(kProtocolError, "SETTINGS on a stream");
      return OnSettings(flags, payload);
    case kPushPromise:
      return Fail(kProtocolError, "PUSH_PROMISE from a client");
    case kPing:
      if (id != 0 || payload.size() != 8) return Fail(kProtocolError, "malformed PING");
      if (!(flags & kAck)) {
        if (++queued_acks_ > kMaxQueuedAcks) return Fail(kEnhanceYourCalm, "too many PINGs");
        AppendFrameHeader(&out_, 8, kPing, kAck, 0);
        out_.append(payload);
        Dirty();
      }
      return true;
    case kGoaway:
      return true;  // the client closes when it is done
    case kWindowUpdate: {
      if (payload.size() != 4) return Fail(kFrameSizeError, "malformed WINDOW_UPDATE");
      const uint32_t inc = Read32(payload.data()) & 0x7fffffff;
      if (inc == 0) {
        if (id == 0) return Fail(kProtocolError, "WINDOW_UPDATE of 0");
        Reset(id, kProtocolError);
        return true;
      }
      if (id == 0 && send_window_ + inc > kMaxWindow) {
        return Fail(kFlowControlError, "window above 2^31-1");
      }
      OnWindowUpdate(id, inc);
      return true;
    }
    default:
      return true;  // unknown frame types are ignored
  }
}

bool Connection::OnSettings(uint8_t flags, std::string_view payload) {
  if (flags & kAck) {
    if (!payload.empty()) return Fail(kFrameSizeError, "SETTINGS ACK with a payload");
    return true;
  }
  if (payload.size() % 6 != 0) return Fail(kFrameSizeError, "malformed SETTINGS");
  for (size_t i = 0; i < payload.size(); i += 6) {
    const uint16_t key = (static_cast<uint8_t>(payload[i]) << 8) | static_cast<uint8_t>(payload[i + 1]);
    const uint32_t value = Read32(payload.data() + i + 2);
    switch (key) {
      case kInitialWindowSize: {
        if (value > kMaxWindow) return Fail(kFlowControlError, "initial window above 2^31-1");
        const int64_t delta = static_cast<int64_t>(value) - peer_initial_window_;
        peer_initial_window_ = value;
        for (auto& [sid, s] : streams_) s.send_window += delta;
        break;
      }
      case kMaxFrameSize:
        if (value < kDefaultFrameSize || value > 16777215) {
          return Fail(kProtocolError, "bad SETTINGS_MAX_FRAME_SIZE");
        }
        peer_max_frame_ = value;
        break;
      case kEnablePush:
        if (value > 1) return Fail(kProtocolError, "bad SETTINGS_ENABLE_PUSH");
        break;
      default:
        break;  // our encoder keeps no table; the rest do not bind a server
    }
  }
  if (++queued_acks_ > kMaxQueuedAcks) return Fail(kEnhanceYourCalm, "too many SETTINGS");
  AppendFrameHeader(&out_, 0, kSettings, kAck, 0);
  Dirty();
  PumpBlocked();
  return true;
}

void Connection::OnWindowUpdate(uint32_t id, uint32_t increment) {
  if (id == 0) {
    send_window_ += increment;
    PumpBlocked();
    return;
  }
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  if (it->second.send_window + increment > kMaxWindow) {
    Reset(id, kFlowControlError);
    return;
  }
  it->second.send_window += increment;
  if (it->second.blocked) PumpBlocked();
}

void Connection::RequestHeaders::Add(std::string_view name, std::string_view value) {
  list_size += name.size() + value.size() + 32;
  if (std::any_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    malformed = "upper-case header name";
  }
  if (name.starts_with(":")) {
    const int bit = name == ":method" ? 1 : name == ":scheme" ? 2 : name == ":path" ? 4 : 0;
    if (regular_seen) malformed = "pseudo-header after a regular one";
    if (name != ":authority" && (bit == 0 || (pseudo & bit))) {
      malformed = "unknown or repeated pseudo-header";
    }
    pseudo |= bit;
  } else {
    regular_seen = true;
  }
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

bool Connection::OnHeaders(uint32_t id, std::string_view block, bool end_stream) {
  RequestHeaders h;
  absl::Status st = decoder_.Decode(
      block, [&](std::string_view name, std::string_view value) { h.Add(name, value); });
  if (!st.ok()) return Fail(kCompressionError, std::string(st.message()));

  if (streams_.contains(id)) {
    // Trailers from the client: gRPC clients send none, but they end its side.
    if (!end_stream) return Fail(kProtocolError, "HEADERS in the middle of a stream");
    std::string_view none;
    return OnDataFrame(id, kEndStream, none);
  }
  if (id % 2 == 0 || id <= last_stream_) {
    return Fail(kProtocolError, "HEADERS on a closed or server stream");
  }
  last_stream_ = id;
  if (h.malformed.empty() && h.pseudo != 7) {
    h.malformed = "a request without :method, :scheme or :path";
  }
  if (!h.malformed.empty()) {
    Log().debug("stream {}: malformed request: {}", id, h.malformed);
    Reset(id, kProtocolError);
    return true;
  }
  if (streams_.size() >= loop_->max_streams()) {
    Reset(id, kRefusedStream);
    return true;
  }
  StartCall(id, h);
  if (end_stream) {
    std::string_view none;
    return OnDataFrame(id, kEndStream, none);
  }
  return true;
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
  s.send_window = peer_initial_window_;
  if (s.method->stream) {
    s.server = std::make_shared<ServerStream>(shared_from_this(), id);
    s.handler = s.method->stream(s.server);
  }
}

void Connection::ReplyHttpError(uint32_t id, const char* http_status, const absl::Status* grpc) {
  if (ng_) {
    NgReplyHttpError(id, http_status, grpc);
    return;
  }
  std::string reply;
  hpack::EncodeLiteral(8, http_status, &reply);  // :status (static index 8)
  if (grpc) {
    hpack::EncodeLiteral("content-type", "application/grpc", &reply);
    AppendStatus(*grpc, &reply);
  }
  AppendHeaderBlock(id, reply, true);
}

void Connection::HalfClose(uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream& t = it->second;
  t.remote_closed = true;
  if (!t.in.empty()) {
    Answer(id, absl::InternalError("the request ends inside a message"));
  } else if (t.handler) {
    t.handler->OnHalfClose();
  } else if (!t.dispatched) {
    Answer(id, absl::InternalError("the request has no message"));
  }
}

bool Connection::OnDataFrame(uint32_t id, uint8_t flags, std::string_view payload) {
  if (id == 0) return Fail(kProtocolError, "DATA on stream 0");
  recv_unacked_ += payload.size();
  if (recv_unacked_ > kConnWindow) return Fail(kFlowControlError, "data beyond the window");
  if (!Unpad(flags, false, &payload)) return Fail(kProtocolError, "malformed DATA");
  auto it = streams_.find(id);
  if (it == streams_.end()) {
    if (id > last_stream_) return Fail(kProtocolError, "DATA on an idle stream");
    return true;  // a stream we ended: its data is dropped
  }
  Stream& s = it->second;
  if (s.remote_closed) {  // half-closed (remote): RFC 9113 5.1
    Reset(id, kStreamClosed);
    return true;
  }
  s.recv_unacked += payload.size();
  if (s.recv_unacked > kStreamWindow) {
    Reset(id, kFlowControlError);
    return true;
  }
  if (!payload.empty()) OnMessages(id, s, payload);
  // The handlers may have ended the stream.
  it = streams_.find(id);
  if (it == streams_.end()) return true;
  if (flags & kEndStream) {
    HalfClose(id);
  } else {
    SendWindowUpdates(id, &it->second);
  }
  return true;
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
    } else if (s.dispatched) {
      Answer(id, absl::InternalError("a unary call with more than one request message"));
      return;
    } else {
      s.dispatched = true;
      loop_->in_flight().fetch_add(1, std::memory_order_relaxed);
      loop_->DispatchUnary(s.method, message, Responder(shared_from_this(), id));
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

bool Connection::Buffered(int64_t delta) {
  partial_bytes_ = static_cast<size_t>(static_cast<int64_t>(partial_bytes_) + delta);
  return loop_->AddPartial(delta);
}

void Connection::SendWindowUpdates(uint32_t id, Stream* s) {
  if (recv_unacked_ >= kConnWindow / 2) {
    AppendFrameHeader(&out_, 4, kWindowUpdate, 0, 0);
    Append32(&out_, static_cast<uint32_t>(recv_unacked_));
    recv_unacked_ = 0;
    Dirty();
  }
  if (s && s->recv_unacked >= kStreamWindow / 2) {
    AppendFrameHeader(&out_, 4, kWindowUpdate, 0, id);
    Append32(&out_, static_cast<uint32_t>(s->recv_unacked));
    s->recv_unacked = 0;
    Dirty();
  }
}

void Connection::Reset(uint32_t id, ErrorCode code) {
  if (ng_) {
    NgReset(id, code);
    return;
  }
  AppendFrameHeader(&out_, 4, kRstStream, 0, id);
  Append32(&out_, code);
  Dirty();
  Forget(id);
}

void Connection::AppendHeaderBlock(uint32_t id, const std::string& block, bool end_stream) {
  const uint8_t end = end_stream ? kEndStream : 0;
  if (block.size() <= peer_max_frame_) {
    AppendFrameHeader(&out_, block.size(), kHeaders, end | kEndHeaders, id);
    out_ += block;
  } else {
    size_t pos = 0;
    while (pos < block.size()) {
      const size_t n = std::min<size_t>(peer_max_frame_, block.size() - pos);
      const bool last = pos + n == block.size();
      const uint8_t type = pos == 0 ? kHeaders : kContinuation;
      const uint8_t flags = (pos == 0 ? end : 0) | (last ? kEndHeaders : 0);
      AppendFrameHeader(&out_, n, type, flags, id);
      out_.append(block, pos, n);
      pos += n;
    }
  }
  Dirty();
}

void Connection::Answer(uint32_t id, const absl::Status& status) {
  if (ng_) {
    NgAnswer(id, status);
    return;
  }
  auto it = streams_.find(id);
  std::string block;
  if (it == streams_.end() || !it->second.headers_sent) block = ResponseHeaders();
  AppendStatus(status, &block);
  AppendHeaderBlock(id, block, true);
  Forget(id);
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
  for (const std::string& m : s.pending) pending_bytes_ -= m.size() + kQueuedMessageCost;
  pending_bytes_ += s.pending_offset;  // already framed
  if (s.dispatched) loop_->in_flight().fetch_sub(1, std::memory_order_relaxed);
  if (s.handler) s.handler->OnClose();
}

void Connection::Pump(uint32_t id, Stream& s) {
  if (ng_) {
    NgPump(id, s);
    return;
  }
  const size_t framed_before = out_.size();
  bool held = false;  // by a flow-control window or by the output's high water
  while (!s.pending.empty()) {
    if (Unsent() > kOutputHighWater) {
      held = true;
      break;
    }
    const std::string& m = s.pending.front();
    const int64_t left = static_cast<int64_t>(m.size() - s.pending_offset);
    const int64_t n = std::min({left, s.send_window, send_window_,
                                static_cast<int64_t>(peer_max_frame_)});
    if (n <= 0) {
      held = true;
      break;
    }
    if (!s.headers_sent) {
      AppendHeaderBlock(id, ResponseHeaders(), false);
      s.headers_sent = true;
    }
    AppendFrameHeader(&out_, n, kData, 0, id);
    out_.append(m, s.pending_offset, n);
    s.send_window -= n;
    send_window_ -= n;
    s.pending_offset += n;
    pending_bytes_ -= n;
    if (s.server) s.server->queued_.fetch_sub(n, std::memory_order_acq_rel);
    if (s.pending_offset == m.size()) {
      s.pending.pop_front();
      s.pending_offset = 0;
      pending_bytes_ -= kQueuedMessageCost;
    }
  }
  // Whatever was framed goes out with this round's writes, held or not.
  if (out_.size() != framed_before) Dirty();
  NotifyDrained(s);
  if (held) {
    if (!s.blocked) {
      s.blocked = true;
      blocked_.push_back(id);
    }
    return;
  }
  if (s.finish_pending) {
    std::string block;
    if (!s.headers_sent) block = ResponseHeaders();
    AppendStatus(s.final_status, &block);
    AppendHeaderBlock(id, block, true);
    Forget(id);
  }
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
      s.finish_pending = true;
      s.final_status = std::move(o.status);
      if (!s.final_status.ok()) {  // an error drops the messages not begun
        size_t dropped = 0;
        while (s.pending.size() > (s.pending_offset > 0 ? 1 : 0)) {
          dropped += s.pending.back().size();
          pending_bytes_ -= s.pending.back().size() + kQueuedMessageCost;
          s.pending.pop_back();
        }
        if (s.server) s.server->queued_.fetch_sub(dropped, std::memory_order_acq_rel);
      }
      break;
    default:
      return;
  }
  if (!s.blocked) Pump(o.stream, s);
}

void Connection::GoAway() {
  if (going_away_ || closed_) return;
  going_away_ = true;
  if (ng_) {
    NgGoAway(kNoError, "");
    Dirty();
    return;
  }
  AppendFrameHeader(&out_, 8, kGoaway, 0, 0);
  Append32(&out_, last_stream_);
  Append32(&out_, kNoError);
  Dirty();
}

void Connection::Flush() {
  if (ng_ && !closed_) NgSend();
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
    wire.clear();
    pos = 0;
  } else if (pos > (256 << 10)) {
    wire.erase(0, pos);
    pos = 0;
  }
  if (!rest && Unsent() == 0) queued_acks_ = 0;
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
  out_.clear();
  in_.clear();
  loop_->Retire(shared_from_this());
}

}  // namespace mkube::store::rpc
