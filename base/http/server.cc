#include "base/http/server.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/log.h"
#include "fmt/format.h"

namespace mkube::http {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

spdlog::logger& Log() {
  static spdlog::logger& l = log::Logger("http");
  return l;
}

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
  }
}

std::string Head(int status, const std::string& content_type,
                 const std::vector<std::pair<std::string, std::string>>& headers, bool keep_alive,
                 std::optional<size_t> length) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\n", status, Reason(status),
                                content_type);
  for (const auto& [k, v] : headers) out += fmt::format("{}: {}\r\n", k, v);
  if (length) {
    out += fmt::format("Content-Length: {}\r\n", *length);
  } else {
    out += "Transfer-Encoding: chunked\r\n";
  }
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

class SessionBase;

// What the sessions of one server share.
struct Context {
  ServerOptions options;
  Handler handler;
  std::atomic<size_t> connections{0};
  std::optional<ssl::context> tls;
  // Every session, to let go of those still waiting for an answer when the server stops.
  std::mutex sessions_mu;
  std::vector<std::weak_ptr<SessionBase>> sessions;
  net::io_context ioc;
};

// A connection's side of an Exchange: everything runs on the connection's strand. A session
// lives while an operation of its connection is pending, or (`hold`) while a handler owes it
// an answer; Exchanges refer to it weakly, so none outlives its server.
class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  // Lets go of the session's hold on itself: only once the server's threads have stopped.
  void Detach() { hold.reset(); }
  std::shared_ptr<SessionBase> hold;
  virtual void Post(std::function<void()> f) = 0;
  virtual void Finish(uint64_t seq, Response r) = 0;
  virtual void Start(uint64_t seq, int status, std::string content_type) = 0;
  virtual void Send(uint64_t seq, std::string chunk) = 0;
  virtual void End(uint64_t seq) = 0;
  virtual void OnClose(uint64_t seq, std::function<void()> f) = 0;

  std::atomic<size_t> backlog{0};  // bytes queued and not yet written
  std::atomic<bool> gone{false};
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
    auto s = s_.lock();
    if (!s || s->gone.load() || s->backlog.load() > max_backlog_) return false;
    s->backlog.fetch_add(chunk.size());
    s->Post([s, seq = seq_, c = std::move(chunk)]() mutable { s->Send(seq, std::move(c)); });
    return true;
  }
  void End() override {
    if (auto s = s_.lock()) s->Post([s, seq = seq_] { s->End(seq); });
  }
  void OnClose(std::function<void()> f) override {
    auto s = s_.lock();
    if (!s) return f();
    s->Post([s, seq = seq_, f = std::move(f)]() mutable { s->OnClose(seq, std::move(f)); });
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
      stream_.async_handshake(ssl::stream_base::server,
                              [self = Self()](beast::error_code ec) { self->Handshaken(ec); });
    }
  }

  void Post(std::function<void()> f) override { net::post(stream_.get_executor(), std::move(f)); }

  void Finish(uint64_t seq, Response r) override {
    if (seq != seq_ || state_ != State::kAnswering) return;
    bool cache_control = false;
    for (const auto& [k, v] : r.headers) cache_control |= k == "Cache-Control";
    if (!cache_control) r.headers.emplace_back("Cache-Control", "no-cache, private");
    Queue(Head(r.status, r.content_type, r.headers, keep_alive_, r.body.size()) + r.body);
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
    Queue(Head(status, content_type, {{"Cache-Control", "no-cache, private"}}, false, std::nullopt));
    WatchForClose();
    hold.reset();  // the read watching for the client's close holds the session now
  }

  void Send(uint64_t seq, std::string chunk) override {
    const size_t n = chunk.size();
    if (seq != seq_ || state_ != State::kStreaming || chunk.empty()) {
      backlog.fetch_sub(n);
      return;
    }
    // The chunk counts against the backlog until the socket has taken it.
    Queue(fmt::format("{:x}\r\n", n) + chunk + "\r\n", n);
  }

  void End(uint64_t seq) override {
    if (seq != seq_ || state_ != State::kStreaming) return;
    Queue("0\r\n\r\n");
    state_ = State::kClosing;
  }

  void OnClose(uint64_t seq, std::function<void()> f) override {
    if (seq != seq_) return;
    if (state_ == State::kClosed) {
      f();
    } else {
      on_close_ = std::move(f);
    }
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

  void Queue(std::string bytes, size_t counted = 0) {
    out_.push_back({std::move(bytes), counted});
    if (!writing_) WriteNext();
  }

  void WriteNext() {
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
    net::async_write(stream_, net::buffer(out_.front().bytes),
                     [self = Self()](beast::error_code ec, size_t) {
                       // Closed meanwhile (the client went away while this write was queued
                       // to complete): the queue is gone with the connection.
                       if (ec || self->state_ == State::kClosed) return self->Close();
                       self->backlog.fetch_sub(self->out_.front().counted);
                       self->out_.pop_front();
                       self->WriteNext();
                     });
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
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).close();
    // A write in flight still reads the front of the queue: the queue goes with the session.
    if (!writing_) out_.clear();
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
  struct Pending {
    std::string bytes;
    size_t counted;  // of the backlog
  };
  std::deque<Pending> out_;
  std::function<void()> on_close_;
};

absl::Status LoadTls(const ServerOptions& o, ssl::context* tls) {
  boost::system::error_code ec;
  tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  tls->use_certificate_chain_file(o.tls_cert_file, ec);
  if (ec) return absl::InvalidArgumentError(fmt::format("cannot load the serving certificate {}: {}",
                                                        o.tls_cert_file, ec.message()));
  tls->use_private_key_file(o.tls_key_file, ssl::context::pem, ec);
  if (ec) return absl::InvalidArgumentError(fmt::format("cannot load the serving key {}: {}",
                                                        o.tls_key_file, ec.message()));
  if (!o.client_ca_file.empty()) {
    tls->load_verify_file(o.client_ca_file, ec);
    if (ec) return absl::InvalidArgumentError(fmt::format("cannot load the client CA {}: {}",
                                                          o.client_ca_file, ec.message()));
    tls->set_verify_mode(ssl::verify_peer);
  }
  // HTTP/1.1 is what this server speaks; a client offering h2 as well gets HTTP/1.1.
  SSL_CTX_set_alpn_select_cb(
      tls->native_handle(),
      [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
         unsigned int inlen, void*) -> int {
        for (unsigned int i = 0; i < inlen;) {
          const unsigned int len = in[i];
          if (i + 1 + len > inlen) break;
          if (std::string_view(reinterpret_cast<const char*>(in + i + 1), len) == "http/1.1") {
            *out = in + i + 1;
            *outlen = static_cast<unsigned char>(len);
            return SSL_TLSEXT_ERR_OK;
          }
          i += 1 + len;
        }
        return SSL_TLSEXT_ERR_NOACK;
      },
      nullptr);
  return absl::OkStatus();
}

}  // namespace

const std::string& Request::Header(std::string_view name) const {
  static const std::string* none = new std::string();
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return *none;
}

struct Server::Impl {
  Context ctx;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::endpoint bound;
  bool stopped = false;

  void Accept() {
    acceptor->async_accept(net::make_strand(ctx.ioc), [this](beast::error_code ec,
                                                             tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
      if (!ec) Serve(std::move(socket));
      Accept();
    });
  }

  void Serve(tcp::socket socket) {
    if (ctx.connections.load() >= ctx.options.max_connections) {
      Log().warn("refusing a connection: {} are open already", ctx.connections.load());
      return;  // closed as `socket` goes
    }
    beast::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    auto remote = socket.remote_endpoint(ec);
    std::string peer = ec ? "" : fmt::format("{}:{}", remote.address().to_string(), remote.port());
    std::shared_ptr<SessionBase> session;
    if (ctx.tls) {
      using TlsStream = beast::ssl_stream<beast::tcp_stream>;
      auto s = std::make_shared<Session<TlsStream>>(
          &ctx, TlsStream(std::move(socket), *ctx.tls), std::move(peer));
      s->Run();
      session = s;
    } else {
      auto s = std::make_shared<Session<beast::tcp_stream>>(
          &ctx, beast::tcp_stream(std::move(socket)), std::move(peer));
      s->Run();
      session = s;
    }
    std::lock_guard<std::mutex> l(ctx.sessions_mu);
    if (ctx.sessions.size() >= 1024 && ctx.sessions.size() >= 2 * ctx.connections.load()) {
      std::erase_if(ctx.sessions, [](const auto& w) { return w.expired(); });
    }
    ctx.sessions.push_back(session);
  }
};

Server::Server(ServerOptions options, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->ctx.options = std::move(options);
  impl_->ctx.handler = std::move(handler);
}

Server::~Server() { Stop(); }

absl::Status Server::Start() {
  const ServerOptions& o = impl_->ctx.options;
  if (!o.tls_cert_file.empty() || !o.tls_key_file.empty()) {
    if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
      return absl::InvalidArgumentError("a TLS certificate needs its key, and a key its certificate");
    }
    impl_->ctx.tls.emplace(ssl::context::tls_server);
    if (auto st = LoadTls(o, &*impl_->ctx.tls); !st.ok()) return st;
  }
  const size_t colon = o.listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(o.listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(fmt::format("listen address {} is not host:port", o.listen));
  }
  std::string host = o.listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  beast::error_code ec;
  auto addr = net::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (ec) return absl::InvalidArgumentError(fmt::format("listen address {}: {}", o.listen, ec.message()));
  tcp::endpoint ep(addr, static_cast<uint16_t>(port));
  auto& acc = impl_->acceptor.emplace(impl_->ctx.ioc);
  if (acc.open(ep.protocol(), ec); !ec) acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return absl::UnavailableError(fmt::format("cannot listen on {}: {}", o.listen, ec.message()));
  impl_->bound = acc.local_endpoint();
  impl_->work.emplace(impl_->ctx.ioc.get_executor());
  impl_->Accept();
  for (int i = 0; i < std::max(1, o.io_threads); ++i) {
    impl_->threads.emplace_back([this] { impl_->ctx.ioc.run(); });
  }
  return absl::OkStatus();
}

void Server::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->work.reset();
  impl_->ctx.ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
  // No thread runs the I/O context now: the listener closes here, at once.
  if (impl_->acceptor) {
    beast::error_code ignored;
    impl_->acceptor->close(ignored);
  }
  // The threads are gone: sessions that waited for an answer let go of themselves, and go
  // with the I/O context's pending work when the server does.
  std::lock_guard<std::mutex> l(impl_->ctx.sessions_mu);
  for (auto& w : impl_->ctx.sessions) {
    if (auto s = w.lock()) s->Detach();
  }
  impl_->ctx.sessions.clear();
}

std::string Server::address() const {
  const auto& ep = impl_->bound;
  return ep.address().is_v6() ? fmt::format("[{}]:{}", ep.address().to_string(), ep.port())
                              : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

int Server::port() const { return impl_->bound.port(); }
bool Server::tls() const { return impl_->ctx.tls.has_value(); }
size_t Server::connections() const { return impl_->ctx.connections.load(); }

std::string UrlDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() &&
               absl::ascii_isxdigit(s[i + 1]) && absl::ascii_isxdigit(s[i + 2])) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  for (absl::string_view part : absl::StrSplit(absl::string_view(query.data(), query.size()), '&', absl::SkipEmpty())) {
    const std::string_view p(part.data(), part.size());
    const size_t eq = p.find('=');
    if (eq == std::string_view::npos) {
      out.emplace_back(UrlDecode(p), "");
    } else {
      out.emplace_back(UrlDecode(p.substr(0, eq)), UrlDecode(p.substr(eq + 1)));
    }
  }
  return out;
}

}  // namespace mkube::http
