#include "base/http/tls_stream.h"

#include <openssl/err.h>

#include <boost/asio/ssl/error.hpp>
#include <cerrno>

namespace mkube::http::detail {
namespace {

// A BIO that appends what OpenSSL writes to the std::string it is given.
BIO_METHOD* RecordsOut() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "mkube records");
    BIO_meth_set_write(m, [](BIO* b, const char* data, int n) -> int {
      static_cast<std::string*>(BIO_get_data(b))->append(data, static_cast<size_t>(n));
      return n;
    });
    BIO_meth_set_ctrl(
        m, [](BIO*, int cmd, long, void*) -> long { return cmd == BIO_CTRL_FLUSH ? 1 : 0; });
    return m;
  }();
  return method;
}

}  // namespace

TlsCore::TlsCore(net::ip::tcp::socket s, SSL_CTX* ctx)
    : socket(std::move(s)), read_timer(socket.get_executor()), write_timer(socket.get_executor()) {
  beast::error_code ec;
  socket.non_blocking(true, ec);
  ssl = ec ? nullptr : SSL_new(ctx);
  BIO* in = ssl ? BIO_new_socket(static_cast<int>(socket.native_handle()), BIO_NOCLOSE) : nullptr;
  BIO* records = in ? BIO_new(RecordsOut()) : nullptr;
  if (!records) {
    if (in) BIO_free(in);
    Close();  // every operation then ends with bad_descriptor
    return;
  }
  BIO_set_data(records, &out);
  BIO_set_init(records, 1);
  SSL_set_bio(ssl, in, records);
  SSL_set_accept_state(ssl);
}

TlsCore::~TlsCore() {
  if (ssl) SSL_free(ssl);  // and its BIOs; the socket closes as it goes
}

bool TlsCore::Encrypt(const void* data, size_t n, beast::error_code& ec) {
  ERR_clear_error();
  size_t written = 0;
  const int r = SSL_write_ex(ssl, data, n, &written);
  if (r == 1 && written == n) return true;
  ec = SslError(r);
  return false;
}

size_t TlsCore::Decrypt(void* data, size_t n, bool& want_read, beast::error_code& ec) {
  size_t total = 0;
  while (total < n) {
    size_t got = 0;
    ERR_clear_error();
    const int r = SSL_read_ex(ssl, static_cast<char*>(data) + total, n - total, &got);
    if (r == 1) {
      total += got;
      if (!SSL_has_pending(ssl)) break;  // the socket is asked again by the next read
      continue;
    }
    if (SSL_get_error(ssl, r) == SSL_ERROR_WANT_READ) {
      want_read = true;
    } else if (total == 0) {
      ec = SslError(r);
    }
    break;
  }
  return total;
}

bool TlsCore::SendNow(beast::error_code& ec) {
  size_t sent = 0;
  while (sent < out.size()) {
    const size_t k = socket.write_some(net::buffer(out.data() + sent, out.size() - sent), ec);
    if (ec == net::error::would_block || ec == net::error::try_again) {
      ec = {};
      break;
    }
    if (ec) return false;
    sent += k;
  }
  if (sent == out.size()) {
    Release(out);
    return true;
  }
  out.erase(0, sent);
  return false;
}

void TlsCore::SendAside(beast::error_code& ec) {
  if (out.empty() || writing) return;
  // What a read makes is a few bytes (an alert, a key update's answer) on a socket with room;
  // a peer that sends those while not reading what it is sent loses its connection.
  if (!SendNow(ec) && !ec) ec = net::error::no_buffer_space;
}

void TlsCore::Arm(net::steady_timer& timer) {
  if (deadline == std::chrono::steady_clock::time_point::max()) return;
  timer.expires_at(deadline);
  timer.async_wait([weak = weak_from_this()](beast::error_code ec) {
    if (ec) return;
    if (auto c = weak.lock()) {
      c->timed_out = true;
      c->Close();  // the pending wait ends with an error, made a timeout
    }
  });
}

beast::error_code TlsCore::SslError(int ret) const {
  switch (SSL_get_error(ssl, ret)) {
    case SSL_ERROR_ZERO_RETURN:
      return net::error::eof;
    case SSL_ERROR_SYSCALL:
      return errno != 0 ? beast::error_code(errno, beast::system_category()) : net::error::eof;
    case SSL_ERROR_SSL:
      if (const unsigned long e = ERR_get_error()) {
        return beast::error_code(static_cast<int>(e), net::error::get_ssl_category());
      }
      return net::error::connection_aborted;
    default:
      return net::error::connection_aborted;
  }
}

void TlsCore::Close() {
  beast::error_code ignored;
  read_timer.cancel();
  write_timer.cancel();
  socket.close(ignored);
}

void TlsStream::expires_never() {
  core_->deadline = std::chrono::steady_clock::time_point::max();
  core_->read_timer.cancel();
  core_->write_timer.cancel();
}

void TlsStream::shutdown(beast::error_code& ec) {
  TlsCore& c = *core_;
  if (c.socket.is_open() && c.ssl && !c.writing) {
    ERR_clear_error();
    SSL_shutdown(c.ssl);
    c.SendNow(ec);
  }
  ec = {};
  c.socket.shutdown(net::ip::tcp::socket::shutdown_both, ec);
  c.Close();
}

void teardown(beast::role_type, TlsStream& stream, beast::error_code& ec) { stream.shutdown(ec); }

}  // namespace mkube::http::detail
