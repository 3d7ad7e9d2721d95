#include "base/http/server.h"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/http/session.h"
#include "base/log.h"
#include "fmt/format.h"

namespace mkube::http {
namespace detail {

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

}  // namespace detail

namespace {

using namespace detail;  // NOLINT: the server's own internals
namespace beast = boost::beast;

spdlog::logger& Log() {
  static spdlog::logger& l = log::Logger("http");
  return l;
}

absl::Status LoadTls(const ServerOptions& o, ssl::context* tls) {
  boost::system::error_code ec;
  tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  // An idle connection keeps no record buffer (see TlsStream), sessions resume from tickets
  // rather than from a server-side cache of every client, and a client that closes without
  // close_notify has ended its stream (HTTP frames its own messages).
  SSL_CTX_set_mode(tls->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_cache_mode(tls->native_handle(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(tls->native_handle(), SSL_OP_IGNORE_UNEXPECTED_EOF);
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
  // h2 when the client offers it, else HTTP/1.1 (a client that names no protocol gets it).
  SSL_CTX_set_alpn_select_cb(
      tls->native_handle(),
      [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
         unsigned int inlen, void*) -> int {
        static constexpr unsigned char kServed[] = "\x02h2\x08http/1.1";
        unsigned char* chosen = nullptr;
        if (SSL_select_next_proto(&chosen, outlen, kServed, sizeof kServed - 1, in, inlen) !=
            OPENSSL_NPN_NEGOTIATED) {
          return SSL_TLSEXT_ERR_NOACK;
        }
        *out = chosen;
        return SSL_TLSEXT_ERR_OK;
      },
      nullptr);
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> Request::Subprotocols() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : headers) {
    if (k != "sec-websocket-protocol") continue;
    for (absl::string_view p : absl::StrSplit(v, ',', absl::SkipWhitespace())) {
      out.emplace_back(absl::StripAsciiWhitespace(p));
    }
  }
  return out;
}

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
    if (ctx.tls) {
      auto s = std::make_shared<Session<TlsStream>>(
          &ctx, TlsStream(std::move(socket), ctx.tls->native_handle()), std::move(peer));
      s->Run();
      ctx.Register(s);
    } else {
      auto s = std::make_shared<Session<beast::tcp_stream>>(
          &ctx, beast::tcp_stream(std::move(socket)), std::move(peer));
      s->Run();
      ctx.Register(s);
    }
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
  impl_->ctx.DetachAll();
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
