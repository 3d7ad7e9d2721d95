#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "store/rpc/tls.h"

// A gRPC server of our own: HTTP/2 (RFC 9113, by libnghttp2 on memory buffers) over TCP, plain
// or TLS, gRPC's framing of messages in DATA frames and its status in trailers, on one or more
// epoll event loops that do every read and write. It serves the
// store's unary and bidirectional-streaming methods to any gRPC client (etcdctl's Go client,
// gRPC C++ channels).
//
// Why not gRPC's own server: a put's answer then costs one write(2) per call and several
// thread hand-offs; here the answers of a whole group commit are framed by the loop that owns
// each connection and leave in one write per connection.
namespace mkube::store::rpc {

class Connection;
class Loop;

// The host of "HOST:PORT" or "[V6]:PORT" (without the brackets).
std::string_view HostOf(std::string_view listen);

// Frames a serialized message as gRPC does: uncompressed flag, 32-bit length, bytes.
std::string FrameMessage(const google::protobuf::MessageLite& message);
// A framed message of `size` bytes whose body (from offset 5) the caller fills.
std::string NewFrame(size_t size);

// The answer to one unary call. Any thread may complete it, once; an answer to a call whose
// client is gone is dropped. One destroyed without answering answers INTERNAL.
class Responder {
 public:
  Responder() = default;
  Responder(Responder&&) = default;
  Responder& operator=(Responder&&) = default;
  ~Responder();
  void Reply(const google::protobuf::MessageLite& response);
  void Fail(const absl::Status& status);
  // This call is the only work its loop has: the handler may finish it on the loop's thread
  // even if that waits (for a sync), which saves the hand-offs to another thread and back.
  bool quiet() const { return quiet_; }

 private:
  friend class Connection;
  friend class Loop;
  Responder(std::shared_ptr<Connection> conn, uint32_t stream)
      : conn_(std::move(conn)), stream_(stream) {}
  std::shared_ptr<Connection> conn_;
  uint32_t stream_ = 0;
  bool quiet_ = false;
};

// The sending side of one streaming call, shared by the transport and the call's handler.
// Every method may be called from any thread.
class ServerStream {
 public:
  ServerStream(std::shared_ptr<Connection> conn, uint32_t stream)
      : conn_(std::move(conn)), stream_(stream) {}

  // Queues a message framed by FrameMessage. A handler that writes faster than its client
  // reads should watch queued_bytes() (and OnDrained): a stream with
  // ServerOptions::max_stream_queued_messages waiting is ended with RESOURCE_EXHAUSTED.
  void Write(std::string framed);
  void Write(const google::protobuf::MessageLite& message) { Write(FrameMessage(message)); }
  // Ends the call with status; later writes are dropped.
  void Finish(const absl::Status& status);
  // Bytes queued on the stream that the connection has not yet handed to the kernel.
  size_t queued_bytes() const { return queued_.load(std::memory_order_acquire); }
  // `fn` runs on the transport's thread once queued bytes fall to `low` after ArmDrained().
  void OnDrained(size_t low, std::function<void()> fn) {
    low_ = low;
    drained_ = std::move(fn);
  }
  void ArmDrained() { armed_.store(true, std::memory_order_release); }

 private:
  friend class Connection;
  std::shared_ptr<Connection> conn_;
  const uint32_t stream_;
  std::atomic<size_t> queued_{0};
  std::atomic<bool> armed_{false};
  // Set by OnDrained when the handler is made, before any write; then read by the loop only.
  size_t low_ = 0;
  std::function<void()> drained_;
};

// A streaming call's handler. The transport calls it on the connection's loop thread, one
// call at a time, in order.
class StreamHandler {
 public:
  virtual ~StreamHandler() = default;
  virtual void OnMessage(std::string_view message) = 0;
  // The client sends no more.
  virtual void OnHalfClose() {}
  // The call is over (finished, reset by the client, or its connection is gone): nothing more
  // is called and later writes are dropped. The handler is destroyed after this.
  virtual void OnClose() {}
};

// Unary handlers run on a loop thread and must not block on I/O (unless the responder is
// quiet()): answer now, or hand the responder to whatever will answer.
using UnaryHandler = std::function<void(std::string_view request, Responder responder)>;
using StreamFactory =
    std::function<std::unique_ptr<StreamHandler>(std::shared_ptr<ServerStream> stream)>;

struct ServerOptions {
  std::string listen = "127.0.0.1:0";
  int loops = 1;
  // Larger request messages are refused with RESOURCE_EXHAUSTED.
  size_t max_message_bytes = 4 << 20;
  // What a client that asks and does not read may leave waiting on the server.
  // A connection whose unsent output (answers and stream messages not yet framed, frames not
  // yet written) is above this when more is queued is closed with GOAWAY ENHANCE_YOUR_CALM.
  // One message larger than the limit still goes to a connection below it.
  size_t max_connection_backlog_bytes = 256 << 20;
  // A streaming call with this many messages waiting to be framed (held by flow control or
  // the connection's output) is ended with RESOURCE_EXHAUSTED; its connection goes on.
  size_t max_stream_queued_messages = 1 << 18;
  // Client connections open at once; one more is answered GOAWAY ENHANCE_YOUR_CALM and closed.
  size_t max_connections = 10000;
  // Calls open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS); one more is
  // refused with RST_STREAM REFUSED_STREAM, which gRPC clients retry.
  uint32_t max_concurrent_streams = 1000;
  // Bytes of request messages received in part, waiting for their rest, or whole and waiting
  // for their connection's answers to go out before their calls begin (kAnswersHighWater,
  // connection.h): on one connection, and on all of them. A call whose message takes them over
  // either ends RESOURCE_EXHAUSTED.
  size_t max_connection_partial_bytes = 64 << 20;
  size_t max_total_partial_bytes = 1 << 30;
  // Serve TLS with this (nullptr: plaintext).
  std::shared_ptr<TlsContext> tls;
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Register every method before Start. path: "/package.Service/Method".
  void AddUnary(std::string path, UnaryHandler handler);
  void AddStream(std::string path, StreamFactory factory);

  absl::Status Start();
  // The address really bound (port 0 resolved).
  const std::string& address() const { return address_; }
  // Stops accepting, tells clients to go (GOAWAY), gives calls in flight up to `grace`, then
  // closes every connection and stops the loops.
  void Shutdown(std::chrono::milliseconds grace);

  struct Method {
    UnaryHandler unary;
    StreamFactory stream;
  };

 private:
  ServerOptions options_;
  absl::flat_hash_map<std::string, Method> methods_;
  std::vector<std::unique_ptr<Loop>> loops_;
  int listen_fd_ = -1;
  std::string address_;
  std::atomic<int> in_flight_{0};  // unary calls dispatched and not yet answered
  std::atomic<size_t> connections_{0};  // accepted and not yet closed, over every loop
  std::atomic<size_t> partial_bytes_{0};  // of request messages received in part, every loop
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace mkube::store::rpc
