#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/compose.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/role.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

// A server's TLS connection that costs little while idle (internal to base/http). OpenSSL reads
// the socket itself and keeps no record buffer between records; what it writes is gathered in
// a string of the stream's that lives only until the socket has taken it. Asio's own TLS stream
// keeps four 17 KiB buffers per connection for its whole life, which made thousands of idle
// keep-alive connections cost hundreds of MiB.
//
// Waiting never misses readiness: a read waits by peeking one byte through the socket's own
// receive operation, and writes go through the socket's own write operations.
namespace mkube::http::detail {

namespace net = boost::asio;
namespace beast = boost::beast;

// What the stream's operations share; operations hold it, so it outlives the stream object
// while one is pending.
struct TlsCore : std::enable_shared_from_this<TlsCore> {
  TlsCore(net::ip::tcp::socket s, SSL_CTX* ctx);
  ~TlsCore();

  // Plaintext `data` into TLS records appended to `out`.
  bool Encrypt(const void* data, size_t n, beast::error_code& ec);
  // Plaintext into `data` from what OpenSSL has or the socket holds: the bytes (0 when it must
  // wait for the socket: `want_read`).
  size_t Decrypt(void* data, size_t n, bool& want_read, beast::error_code& ec);
  // Writes `out` without waiting: true when all of it went.
  bool SendNow(beast::error_code& ec);
  // After a read or a handshake step: what OpenSSL wrote meanwhile goes now, unless a write
  // operation is under way (it sends `out` before it ends).
  void SendAside(beast::error_code& ec);
  void Arm(net::steady_timer& timer);
  beast::error_code Timeout(beast::error_code ec) const {
    return ec && timed_out ? beast::error::timeout : ec;
  }
  beast::error_code SslError(int ret) const;
  void Close();
  static void Release(std::string& s) { std::string().swap(s); }

  net::ip::tcp::socket socket;
  SSL* ssl = nullptr;
  net::steady_timer read_timer, write_timer;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool timed_out = false;
  bool writing = false;  // a write (or the handshake's sending) is under way
  std::string out;       // records to send
  std::string sending;   // records the socket's write in flight sends
  char peek = 0;
};

class TlsStream {
 public:
  using executor_type = net::ip::tcp::socket::executor_type;

  TlsStream(net::ip::tcp::socket socket, SSL_CTX* ctx)
      : core_(std::make_shared<TlsCore>(std::move(socket), ctx)) {}

  executor_type get_executor() { return core_->socket.get_executor(); }
  net::ip::tcp::socket& socket() { return core_->socket; }
  SSL* native_handle() { return core_->ssl; }
  // As beast::tcp_stream's: a deadline for the waits that start from now on.
  void expires_after(std::chrono::steady_clock::duration d) {
    core_->deadline = std::chrono::steady_clock::now() + d;
  }
  void expires_never();
  void close() { core_->Close(); }
  // Says close_notify (if the socket takes it at once) and closes.
  void shutdown(beast::error_code& ec);
  friend void beast_close_socket(TlsStream& s) { s.close(); }

  template <typename Handler>
  auto async_handshake(Handler&& handler) {
    return net::async_compose<Handler, void(beast::error_code)>(HandshakeOp{core_}, handler,
                                                                core_->socket);
  }
  template <typename Buffers, typename Handler>
  auto async_read_some(const Buffers& buffers, Handler&& handler) {
    return net::async_compose<Handler, void(beast::error_code, size_t)>(
        BytesOp<Buffers, true>{core_, buffers}, handler, core_->socket);
  }
  template <typename Buffers, typename Handler>
  auto async_write_some(const Buffers& buffers, Handler&& handler) {
    return net::async_compose<Handler, void(beast::error_code, size_t)>(
        BytesOp<Buffers, false>{core_, buffers}, handler, core_->socket);
  }

 private:
  enum class Step { kStart, kWaiting, kSending, kDone };

  // Sends what `out` holds still through the socket's write, with the deadline.
  template <typename Self>
  static void SendRest(TlsCore& c, Self&& self) {
    c.sending.swap(c.out);
    c.Arm(c.write_timer);
    net::async_write(c.socket, net::buffer(c.sending), std::forward<Self>(self));
  }
  template <typename Self>
  static void WaitToRead(TlsCore& c, Self&& self) {
    c.Arm(c.read_timer);
    c.socket.async_receive(net::buffer(&c.peek, 1), net::socket_base::message_peek,
                           std::forward<Self>(self));
  }
  // Ends at once, though not from inside the call that started the operation.
  template <typename Self>
  static void Later(TlsCore& c, Self&& self) {
    net::post(c.socket.get_executor(), std::forward<Self>(self));
  }

  struct HandshakeOp {
    std::shared_ptr<TlsCore> core;
    Step step = Step::kStart;
    beast::error_code result;

    template <typename Self>
    void operator()(Self& self, beast::error_code ec = {}, size_t = 0) {
      TlsCore& c = *core;
      if (step == Step::kDone) return self.complete(result);
      if (step == Step::kSending) {
        c.write_timer.cancel();
        TlsCore::Release(c.sending);
        c.writing = false;
      } else if (step == Step::kWaiting) {
        c.read_timer.cancel();
      }
      if (step != Step::kStart && (ec = c.Timeout(ec)) && ec != net::error::eof) {
        return self.complete(ec);
      }
      const bool first = step == Step::kStart;
      if (!c.socket.is_open()) return Finish(self, first, net::error::bad_descriptor);
      ERR_clear_error();
      const int r = SSL_do_handshake(c.ssl);
      const int err = r == 1 ? SSL_ERROR_NONE : SSL_get_error(c.ssl, r);
      if (!c.out.empty()) {  // its records go before anything else
        c.writing = true;
        if (!c.SendNow(ec)) {
          if (ec) return Finish(self, first, ec);
          step = Step::kSending;
          return SendRest(c, std::move(self));
        }
        c.writing = false;
      }
      if (err == SSL_ERROR_NONE) return Finish(self, first, {});
      if (err != SSL_ERROR_WANT_READ) return Finish(self, first, c.SslError(r));
      step = Step::kWaiting;
      WaitToRead(c, std::move(self));
    }
    template <typename Self>
    void Finish(Self& self, bool first, beast::error_code ec) {
      if (!first) return self.complete(ec);
      result = ec;
      step = Step::kDone;
      Later(*core, std::move(self));
    }
  };

  // A read (`kRead`) or a write: the bytes it moved, and its result when it ends at once.
  template <typename Buffers, bool kRead>
  struct BytesOp {
    std::shared_ptr<TlsCore> core;
    Buffers buffers;
    Step step = Step::kStart;
    beast::error_code result;
    size_t n = 0;

    template <typename Self>
    void Finish(Self& self, bool first, beast::error_code ec) {
      if (ec) n = 0;
      if (!first) return self.complete(ec, n);
      result = ec;
      step = Step::kDone;
      Later(*core, std::move(self));
    }

    template <typename Self>
    void operator()(Self& self, beast::error_code ec = {}, size_t = 0) {
      if (step == Step::kDone) return self.complete(result, n);
      if constexpr (kRead) {
        Read(self, ec);
      } else {
        Write(self, ec);
      }
    }

    template <typename Self>
    void Read(Self& self, beast::error_code ec) {
      TlsCore& c = *core;
      const bool first = step == Step::kStart;
      if (!first) {
        c.read_timer.cancel();
        // The end of the stream is OpenSSL's to tell (a clean close or not).
        if ((ec = c.Timeout(ec)) && ec != net::error::eof) return self.complete(ec, 0);
      }
      if (!c.socket.is_open()) return Finish(self, first, net::error::bad_descriptor);
      bool want_read = false;
      for (auto b : beast::buffers_range_ref(buffers)) {
        const size_t got = c.Decrypt(b.data(), b.size(), want_read, ec);
        n += got;
        if (got < b.size()) break;
      }
      beast::error_code aside;
      c.SendAside(aside);
      if (n > 0) ec = {};
      if (!ec && aside) ec = aside;
      if (n > 0 || ec || !want_read) return Finish(self, first, ec);
      step = Step::kWaiting;
      WaitToRead(c, std::move(self));
    }

    template <typename Self>
    void Write(Self& self, beast::error_code ec) {
      TlsCore& c = *core;
      if (step == Step::kStart) {
        if (!c.socket.is_open()) return Finish(self, true, net::error::bad_descriptor);
        if (!Encrypt(c, ec)) return Finish(self, true, ec);
        c.writing = true;
      } else {  // the socket's write of `sending` has ended
        c.write_timer.cancel();
        TlsCore::Release(c.sending);
        if ((ec = c.Timeout(ec))) {
          c.writing = false;
          return self.complete(ec, 0);
        }
      }
      // What a read made meanwhile may have joined `out`: all of it goes before the end.
      if (!c.out.empty() && !c.SendNow(ec) && !ec) {
        step = Step::kSending;
        return SendRest(c, std::move(self));
      }
      c.writing = false;
      Finish(self, step == Step::kStart, ec);
    }

    // The buffers' bytes as records: small buffers gathered into records of up to 16 KiB
    // (a watch's lines are small), large ones encrypted where they are.
    bool Encrypt(TlsCore& c, beast::error_code& ec) {
      char chunk[16 << 10];
      size_t used = 0;
      for (auto b : beast::buffers_range_ref(buffers)) {
        const char* p = static_cast<const char*>(b.data());
        size_t left = b.size();
        n += left;
        if (used == 0 && left >= sizeof(chunk)) {
          if (!c.Encrypt(p, left, ec)) return false;
          continue;
        }
        while (left > 0) {
          const size_t take = std::min(left, sizeof(chunk) - used);
          std::memcpy(chunk + used, p, take);
          used += take;
          p += take;
          left -= take;
          if (used == sizeof(chunk)) {
            if (!c.Encrypt(chunk, used, ec)) return false;
            used = 0;
          }
        }
      }
      return used == 0 || c.Encrypt(chunk, used, ec);
    }
  };

  std::shared_ptr<TlsCore> core_;
};

// A WebSocket over TLS ends by closing its connection (beast finds these by argument lookup).
void teardown(beast::role_type, TlsStream& stream, beast::error_code& ec);

template <typename Handler>
void async_teardown(beast::role_type role, TlsStream& stream, Handler&& handler) {
  beast::error_code ec;
  teardown(role, stream, ec);
  net::post(stream.get_executor(),
            [h = std::forward<Handler>(handler), ec]() mutable { std::move(h)(ec); });
}

}  // namespace mkube::http::detail
