#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

// An HTTP server: HTTP/1.1 with keep-alive and chunked streaming (Boost.Beast), and over TLS
// HTTP/2 for clients that offer h2 (libnghttp2); TLS with optional client certificates. The
// Kubernetes API front of the apiserver and every daemon's /healthz, /readyz and /metrics. Handlers run on the server's I/O threads and must not block: work
// that waits goes elsewhere and answers through its Exchange from any thread.
namespace mkube::http {

struct Request {
  std::string method;  // "GET"
  std::string path;    // as sent, without the query
  std::string query;   // as sent, without the '?'
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;
  // The verified client certificate's subject: common name and organizations.
  std::string client_cn;
  std::vector<std::string> client_orgs;
  std::string peer;  // host:port of the client
  // An `Upgrade: websocket` request (see Exchange::AcceptWebSocket).
  bool websocket = false;

  // The first value of header `name` (lower case); empty when absent.
  const std::string& Header(std::string_view name) const;
  // The WebSocket subprotocols the client offers, in its order of preference.
  std::vector<std::string> Subprotocols() const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// A WebSocket connection once accepted, from any thread. Calls after it closed (or its
// server stopped) do nothing; it may outlive its server.
class WebSocket {
 public:
  virtual ~WebSocket() = default;
  // Sends one binary message, waiting while the client is behind; false once closed.
  virtual bool Send(std::string message) = 0;
  // As Send, without waiting: for small answers made on an I/O thread.
  virtual bool Push(std::string message) = 0;
  // Reads again after on_message returned false.
  virtual void Resume() = 0;
  // A normal close, after what was sent.
  virtual void Close() = 0;
};
using WebSocketPtr = std::shared_ptr<WebSocket>;

struct WebSocketHandlers {
  // Each message in turn, on an I/O thread; false pauses reading until Resume.
  std::function<bool(std::string message)> on_message;
  // Once, on an I/O thread, when the connection has ended, whichever side ended it.
  std::function<void()> on_close;
};

// A piece of a streamed answer that may be shared with other streams (a watch event's line,
// sent to every watcher without a copy).
using Piece = std::shared_ptr<const std::string>;

// One request's answer, from any thread: Finish once; or Start, Write any number of chunks,
// then End. Calls after the connection closed (or its server stopped) do nothing; an
// Exchange may outlive its server.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual void Finish(Response r) = 0;
  // A streamed answer (chunked; HTTP/2's DATA frames). What is written goes out in order; what
  // a stream has waiting when its turn comes goes out as one chunk (see
  // ServerOptions::coalesce).
  virtual void Start(int status, std::string content_type) = 0;
  // False once the client is gone, or when it is so far behind that the stream is cut.
  virtual bool Write(std::string chunk) = 0;
  virtual bool Write(Piece piece) = 0;
  // As Write, but a client that is behind makes it wait rather than cutting the stream: for
  // a relay whose source can wait (a log, a command's output). False once the client is gone.
  virtual bool WriteWaiting(std::string chunk) = 0;
  virtual void End() = 0;
  // Called once, on an I/O thread, if the connection closes before the answer ended.
  virtual void OnClose(std::function<void()> f) = 0;
  // The answer to a websocket request: 101 with `subprotocol` (empty: none), then `open` is
  // called on an I/O thread with the connection and returns its handlers (no message is
  // read before). If the handshake fails, `open` is not called.
  virtual void AcceptWebSocket(std::string subprotocol,
                               std::function<WebSocketHandlers(WebSocketPtr)> open) = 0;
};
using ExchangePtr = std::shared_ptr<Exchange>;
using Handler = std::function<void(Request, ExchangePtr)>;

struct ServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 takes any free one
  // PEM files. Without a certificate the server speaks plain HTTP.
  std::string tls_cert_file, tls_key_file;
  // Client certificates signed by this CA are verified and their subject given to handlers;
  // a client without one is still served (it may carry a bearer token).
  std::string client_ca_file;
  int io_threads = 2;
  size_t max_body_bytes = 3 << 20;     // larger: 413
  size_t max_header_bytes = 64 << 10;  // larger: 431
  // A request must arrive whole within this; an idle keep-alive connection closes after
  // idle_timeout.
  std::chrono::milliseconds read_timeout = std::chrono::seconds(60);
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(90);
  size_t max_connections = 20000;  // more are closed at once
  // Bytes a streamed answer may have waiting for a slow client before Write refuses.
  size_t max_stream_backlog = 4 << 20;
  // Streamed answers with something to send are flushed in rounds, each carrying all that a
  // stream has waiting. A round starts at once while the rounds of the last `coalesce` have
  // flushed fewer than kQuickFlushes streams; past that, the next waits for the next window.
  // A quiet server so sends each event at once, and a busy one (a thousand watches) gathers
  // events into fewer, larger writes, which cost both ends far less than one each.
  std::chrono::milliseconds coalesce{10};
  static constexpr size_t kQuickFlushes = 32;
  // The answer to a request refused before any handler saw it (413, 431, 408, 400);
  // plain text when unset.
  std::function<Response(int status, const std::string& message)> error_response;
};

class Server {
 public:
  Server(ServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts the I/O threads. The error names what failed (address, files).
  absl::Status Start();
  // Closes the listener and every connection; joins the threads. Idempotent.
  void Stop();
  // host:port as bound.
  std::string address() const;
  int port() const;
  bool tls() const;
  size_t connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Percent-decoding of a query component ('+' is a space); the query split into its pairs.
std::string UrlDecode(std::string_view s);
std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query);

}  // namespace mkube::http
