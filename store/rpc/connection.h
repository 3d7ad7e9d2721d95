#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "store/rpc/server.h"
#include "store/rpc/tls.h"

typedef struct nghttp2_session nghttp2_session;

// The transport's inside: one connection (its HTTP/2 by libnghttp2), and what crosses to its
// loop.
namespace mkube::store::rpc {

// The error codes of RFC 9113 the connection sends itself.
enum ErrorCode : uint32_t {
  kNoError = 0,
  kRefusedStream = 7,
  kEnhanceYourCalm = 11,  // gRPC clients report RESOURCE_EXHAUSTED
};
inline constexpr int64_t kStreamWindow = 4 << 20;  // what each stream may send us unacknowledged
inline constexpr int64_t kConnWindow = 16 << 20;   // and the whole connection
inline constexpr size_t kMaxHeaderList = 64 << 10;
// Stream data stops moving into a connection's output above this many unsent bytes.
inline constexpr size_t kOutputHighWater = 1 << 20;
// A connection's unary calls wait to begin while the answers it has made and not yet framed,
// with those of its calls in progress (counted at the average size of its recent answers),
// come to more than this; they begin again once that is down to half. A client that asks and
// does not take its answers (a window of 0) holds this much of them, whatever number of calls
// it may open.
inline constexpr size_t kAnswersHighWater = 32 << 20;
// A connection that held this much output at once gives the memory back to the system when it
// closes (the allocator keeps what is freed).
inline constexpr size_t kReleaseAfter = 8 << 20;
// What a message waiting in a stream's queue costs beyond its bytes (its string, its slot),
// so that the backlog limit bounds memory with small messages too.
inline constexpr size_t kQueuedMessageCost = 64;

// gRPC's percent-encoding of grpc-message: bytes outside printable ASCII, and '%'.
std::string PercentEncode(std::string_view s);

// A grpc-timeout header's value (1 to 8 digits and a unit: H M S m u n), or nullopt if it is
// not one.
std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value);

// The stream ids a client has opened streams with, as far as RFC 9113 5.1.1 needs them: a new
// stream's id must be greater than every one before it, so a HEADERS on a lower id the client
// skipped is a connection error (nghttp2 ignores it: it cannot tell it from a late trailer on
// a stream it has forgotten). Gaps are rare (gRPC clients count up by two); the latest
// kMaxGaps are kept, and a HEADERS in an older one is left to nghttp2.
class StreamIds {
 public:
  static constexpr size_t kMaxGaps = 64;
  // A client's HEADERS on `id` (odd); false if it would open a stream the client skipped.
  bool Use(uint32_t id);

 private:
  uint32_t highest_ = 0;
  std::deque<std::pair<uint32_t, uint32_t>> skipped_;  // first and last id, oldest first
};

// What a connection refused at accept is sent: SETTINGS, then GOAWAY ENHANCE_YOUR_CALM with
// `why` as its debug data.
std::string RefusalFrames(std::string_view why);

// Work for a loop from any thread.
struct Outgoing {
  enum Kind : uint8_t { kMessage, kFinish, kReply, kAdopt, kGoaway, kStop };
  static Outgoing Control(Kind kind, int fd = -1) {
    Outgoing o;
    o.kind = kind;
    o.fd = fd;
    return o;
  }
  Kind kind = kMessage;
  std::shared_ptr<Connection> conn;
  uint32_t stream = 0;
  std::string data;
  absl::Status status;
  int fd = -1;
};

// The HTTP/2 server side of one TCP connection. Only its loop's thread touches it, except
// through Loop::Post.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // With tls, the connection speaks TLS (a handshake first).
  Connection(Loop* loop, int fd, const TlsContext* tls)
      : loop_(loop), fd_(fd), tls_(tls ? std::make_unique<TlsSession>(*tls) : nullptr) {}
  ~Connection();

  void Open();
  void OnReadable();
  void OnWritable() { Flush(); }
  void Deliver(Outgoing& o);
  // The call's grpc-timeout passed: if it is still open, it ends with DEADLINE_EXCEEDED.
  void Expire(uint32_t id);
  bool HasStream(uint32_t id) const { return streams_.contains(id); }
  // Any thread: a unary call's answer is posted to the loop (`bytes`, framed; 0 for a status).
  void AnswerPosted(size_t bytes) {
    answers_posted_.fetch_add(1, std::memory_order_relaxed);
    replies_posted_.fetch_add(bytes, std::memory_order_relaxed);
  }
  void GoAway();
  void Close();
  // Sends what is queued; false once the connection is closed.
  void Flush();
  bool closed() const { return closed_; }
  Loop* loop() const { return loop_; }
  bool dirty = false;

 private:
  struct Stream {
    const Server::Method* method = nullptr;
    std::string in;  // the start of a request message not yet whole
    std::string encoding;     // grpc-encoding, when not identity: none is supported
    bool dispatched = false;  // unary: the request went to its handler
    bool waiting = false;     // unary: the request (in `request`) waits in waiting_ to go
    std::string request;
    bool headers_sent = false;  // the answer's HEADERS (and its data source) are submitted
    bool finish_pending = false;
    bool blocked = false;   // held by the connection's output high water (in blocked_)
    bool deferred = false;  // its data source waits for more to send
    absl::Status final_status;
    // Framed messages not yet (wholly) in DATA frames: at most one answer for a unary call,
    // at most max_stream_messages() for a stream (Deliver ends it beyond); in bytes, counted
    // in pending_bytes_ against the connection's limit.
    std::deque<std::string> pending;
    size_t pending_offset = 0;
    std::shared_ptr<ServerStream> server;
    std::unique_ptr<StreamHandler> handler;
  };

  // What a request's header fields say that the call needs (nghttp2 has checked the rest).
  struct RequestHeaders {
    void Add(std::string_view name, std::string_view value);
    std::string path, content_type, encoding, timeout, method;
    size_t list_size = 0;
  };
  friend struct Http2Callbacks;

  // Input for nghttp2; false once the connection is closed.
  bool Receive(std::string_view data);
  // The frames nghttp2 has ready, into out_; whether there were any.
  bool TakeFrames();
  // A request's call begins (or is answered at once: unknown method, ...).
  void StartCall(uint32_t id, RequestHeaders& h);
  // An answer that is an HTTP status other than 200 (with a gRPC status if given).
  void ReplyHttpError(uint32_t id, const char* http_status, const absl::Status* grpc);
  // The client sends no more on the call.
  void HalfClose(uint32_t id);
  void OnMessages(uint32_t id, Stream& s, std::string_view data);
  // A unary call's request goes to its handler.
  void Begin(uint32_t id, Stream& s, std::string_view request);
  // Whether unary calls must wait to begin (kAnswersHighWater).
  bool CallsWait();
  // Begins the calls waiting, in order, while CallsWait() allows.
  void BeginWaiting();
  // A unary stream's answer bytes leave the connection (framed, or dropped).
  void ReplyGone(const Stream& s, size_t bytes) {
    if (!s.server) replies_pending_ -= bytes;
  }
  bool Fail(ErrorCode code, std::string_view why);
  void SendGoAway(ErrorCode code, std::string_view why);

  // Ends the call now with status: trailers after what has begun of a message, else at once
  // (Trailers-Only if nothing was sent); messages not begun are dropped.
  void Answer(uint32_t id, const absl::Status& status);
  // The stream's answer goes on: its HEADERS and data source, or more for the source to send.
  void Pump(uint32_t id, Stream& s);
  void PumpBlocked();
  // nghttp2's data source of a stream: its messages, then its trailers.
  ssize_t ReadData(uint32_t id, uint8_t* buf, size_t length, uint32_t* flags);
  // After a stream's queue shrank: its drained callback, if armed and due.
  void NotifyDrained(Stream& s);
  void Forget(uint32_t id);
  void Reset(uint32_t id, ErrorCode code);
  // Ends a stream whose queue is full.
  void Overflow(uint32_t id, Stream& s);
  // Output not yet handed to the kernel: frames not yet written, messages not yet framed.
  size_t Backlog() const { return Unsent() + pending_bytes_; }
  // Frames not yet handed to the kernel (with TLS: encrypted or not).
  size_t Unsent() const {
    return out_.size() - out_pos_ + (tls_ ? tls_->output().size() - wire_pos_ : 0);
  }
  // TLS: the input's records decrypted (false once the connection is closed); the frames
  // of out_ encrypted once the handshake is done.
  bool Decrypt(std::string_view* data);
  bool Encrypt();
  // Closes the connection if `backlog` is over the limit; returns whether it did.
  bool OverLimit(size_t backlog);
  void Dirty();
  // Adds to the bytes of partly received messages; whether every loop's are now over the
  // total limit.
  bool Buffered(int64_t delta);

  Loop* loop_;
  int fd_;
  nghttp2_session* session_ = nullptr;
  std::unique_ptr<TlsSession> tls_;
  std::string plain_;    // TLS: the plaintext of the last input
  size_t wire_pos_ = 0;  // TLS: how much of tls_->output() is sent
  // Frames not yet written; bounded with pending_bytes_ (Backlog()).
  std::string out_;
  size_t out_pos_ = 0;
  // The streams' pending messages, less what is framed, plus an allowance for each message.
  size_t pending_bytes_ = 0;
  // The streams' partly received request messages (their `in`), and the requests of calls
  // waiting to begin, in bytes.
  size_t partial_bytes_ = 0;
  // Unary answers: posted to the loop and not yet delivered (any thread adds), delivered and
  // not yet framed; the calls begun, the answers posted (any thread adds), and the average
  // size of the recent answers.
  std::atomic<size_t> replies_posted_{0};
  size_t replies_pending_ = 0;
  size_t calls_begun_ = 0;
  std::atomic<size_t> answers_posted_{0};
  size_t reply_average_ = 0;
  bool calls_wait_ = false;
  std::deque<uint32_t> waiting_;  // unary calls waiting to begin, in order
  size_t backlog_peak_ = 0;       // the most Backlog() has been
  uint32_t events_ = 1;       // what epoll watches for: EPOLLIN (1), EPOLLOUT when output waits
  bool read_paused_ = false;  // too much output unsent: input is not read (kReadPause)
  bool closed_ = false;
  bool going_away_ = false;

  absl::flat_hash_map<uint32_t, Stream> streams_;
  absl::flat_hash_map<uint32_t, RequestHeaders> requests_;  // header blocks arriving
  StreamIds stream_ids_;
  std::vector<uint32_t> blocked_;
};

}  // namespace mkube::store::rpc
