#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/http/flow.h"
#include "base/http/tls_stream.h"

typedef struct nghttp2_session nghttp2_session;

// An HTTP/2 connection of the server (internal to base/http), by libnghttp2, for clients that
// chose h2 in the TLS handshake (Go's, so kubectl's and Prometheus'). Each stream is one
// request with its Exchange, answered whole or streamed as DATA frames; a streamed answer's
// pieces reach the connection in the server's flush rounds, as HTTP/1.1's chunks do.
namespace mkube::http::detail {

class H2Session;

// One request's stream. Its answer's pieces cross from handlers' threads here; the rest is the
// connection's, on its strand.
class H2Stream final : public Flow, public std::enable_shared_from_this<H2Stream> {
 public:
  H2Stream(Context* ctx, std::weak_ptr<H2Session> session, int32_t id)
      : id(id), ctx_(ctx), session_(std::move(session)) {}

  void Post(std::function<void()> f) override;
  void PostFlush() override;
  // From any thread: a piece of a streamed answer (or, `end`, its end) for the next round;
  // false when the client is gone or has more than `limit` bytes waiting.
  bool Enqueue(Piece piece, size_t limit, bool end);
  std::shared_ptr<H2Session> session() const { return session_.lock(); }

  // On the connection's strand.
  enum class State { kReceiving, kAnswering, kStreaming, kEnded, kClosed };
  const int32_t id;
  State state = State::kReceiving;
  Request request;
  size_t header_bytes = 0;
  int refusal = 0;        // a status to answer at once (413, 431), the request not handed on
  std::deque<Piece> out;  // the answer's bytes the client has not been sent
  size_t out_offset = 0;  // into out.front()
  bool end_queued = false;
  std::function<void()> on_close;
  // What handlers wrote since the last round: moved to `out` on the strand.
  void TakePending(std::vector<std::pair<Piece, bool>>* into);

 private:
  Context* ctx_;
  std::weak_ptr<H2Session> session_;
  std::mutex mu_;
  std::vector<std::pair<Piece, bool>> pending_;
  bool flush_due_ = false;
};

class H2Session final : public Flow, public std::enable_shared_from_this<H2Session> {
 public:
  H2Session(Context* ctx, TlsStream stream, std::string peer, std::string cn,
            std::vector<std::string> orgs);
  ~H2Session() override;

  // Sends the server's SETTINGS and reads.
  void Run();
  void Post(std::function<void()> f) override { net::post(stream_.get_executor(), std::move(f)); }
  void Detach() override;

  // On the strand, for the stream's Exchange.
  void Answer(H2Stream* s, Response r);
  void Begin(H2Stream* s, int status, std::string content_type);
  void Flush(H2Stream* s);
  void OnClose(H2Stream* s, std::function<void()> f);

  // libnghttp2's callbacks (h2_session.cc).
  struct Callbacks;

 private:
  void Read();
  void Pump();
  void Close();
  void Dispatch(H2Stream* s);
  bool Submit(H2Stream* s, int status, const std::string& content_type,
              const std::vector<std::pair<std::string, std::string>>& headers,
              std::optional<size_t> length);
  void StreamClosed(int32_t id);

  Context* ctx_;
  TlsStream stream_;
  std::string peer_, cn_;
  std::vector<std::string> orgs_;
  nghttp2_session* h2_ = nullptr;
  std::vector<char> in_;
  std::string out_;  // frames the socket's write in flight sends
  bool writing_ = false;
  bool receiving_ = false;  // inside nghttp2_session_mem_recv
  bool closed_ = false;
  std::map<int32_t, std::shared_ptr<H2Stream>> streams_;
};

}  // namespace mkube::http::detail
