#pragma once

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>

#include "base/http/flow.h"

// A WebSocket connection of the server (internal to base/http): taken over from an HTTP
// session once its handler accepts the upgrade. Everything runs on the connection's strand;
// handlers' threads reach it through a WebSocket handle that refers to it weakly.
namespace mkube::http::detail {

namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;

class WsFlow : public Flow {
 public:
  virtual void Queue(std::string message) = 0;
  virtual void Resume() = 0;
  virtual void Close() = 0;
};

class WebSocketHandle final : public WebSocket {
 public:
  WebSocketHandle(std::weak_ptr<WsFlow> f, size_t max_backlog)
      : f_(std::move(f)), max_backlog_(max_backlog) {}
  bool Send(std::string message) override {
    auto f = f_.lock();
    if (!f || !f->WaitBelow(max_backlog_)) return false;
    Queue(f, std::move(message));
    return true;
  }
  bool Push(std::string message) override {
    auto f = f_.lock();
    if (!f || f->gone.load()) return false;
    Queue(f, std::move(message));
    return true;
  }
  void Resume() override {
    if (auto f = f_.lock()) f->Post([f] { f->Resume(); });
  }
  void Close() override {
    if (auto f = f_.lock()) f->Post([f] { f->Close(); });
  }

 private:
  static void Queue(const std::shared_ptr<WsFlow>& f, std::string message) {
    f->backlog.fetch_add(message.size());
    f->Post([f, m = std::move(message)]() mutable { f->Queue(std::move(m)); });
  }

  std::weak_ptr<WsFlow> f_;
  size_t max_backlog_;
};

template <typename Stream>
class WsSession final : public WsFlow, public std::enable_shared_from_this<WsSession<Stream>> {
 public:
  WsSession(Context* ctx, Stream stream) : ctx_(ctx), ws_(std::move(stream)) {
    ctx_->connections.fetch_add(1);
  }
  ~WsSession() override { ctx_->connections.fetch_sub(1); }

  void Post(std::function<void()> f) override { net::post(ws_.get_executor(), std::move(f)); }

  template <typename Body>
  void Accept(boost::beast::http::request<Body> req, std::string subprotocol,
              std::function<WebSocketHandlers(WebSocketPtr)> open) {
    beast::get_lowest_layer(ws_).expires_never();
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.set_option(websocket::stream_base::decorator([sp = subprotocol](websocket::response_type& r) {
      if (!sp.empty()) r.set(boost::beast::http::field::sec_websocket_protocol, sp);
    }));
    ws_.read_message_max(ctx_->options.max_body_bytes);
    ws_.binary(true);
    ws_.async_accept(req, [self = this->shared_from_this(), open = std::move(open)](
                              beast::error_code ec) {
      if (ec) return self->Ended();
      self->handlers_ = open(std::make_shared<WebSocketHandle>(
          std::weak_ptr<WsFlow>(self), self->ctx_->options.max_stream_backlog));
      self->open_ = true;
      self->Read();
    });
  }

  void Queue(std::string message) override {
    if (ended_ || closing_) return Written(message.size());
    out_.push_back(std::move(message));
    if (!writing_) WriteNext();
  }
  void Resume() override {
    paused_ = false;
    Read();
  }
  void Close() override {
    if (ended_ || closing_) return;
    closing_ = true;
    if (!writing_) WriteNext();
  }

 private:
  void Read() {
    if (!open_ || ended_ || paused_ || reading_) return;
    reading_ = true;
    ws_.async_read(in_, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      self->reading_ = false;
      if (ec) return self->Ended();
      std::string message = beast::buffers_to_string(self->in_.data());
      self->in_.consume(self->in_.size());
      if (self->handlers_.on_message && !self->handlers_.on_message(std::move(message))) {
        self->paused_ = true;
      }
      self->Read();
    });
  }

  void WriteNext() {
    if (ended_) return;
    if (out_.empty()) {
      writing_ = false;
      if (closing_) {
        writing_ = true;  // the close is the last write
        ws_.async_close(websocket::close_code::normal,
                        [self = this->shared_from_this()](beast::error_code) { self->Ended(); });
      }
      return;
    }
    writing_ = true;
    ws_.async_write(net::buffer(out_.front()),
                    [self = this->shared_from_this()](beast::error_code ec, size_t) {
                      if (ec || self->ended_) return self->Ended();
                      self->Written(self->out_.front().size());
                      self->out_.pop_front();
                      self->WriteNext();
                    });
  }

  // The connection is over: once, whoever ended it.
  void Ended() {
    if (ended_) return;
    ended_ = true;
    gone.store(true);
    for (const auto& m : out_) backlog.fetch_sub(m.size());
    Drained();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).close();
    if (auto f = std::move(handlers_.on_close)) f();
    handlers_ = {};
  }

  Context* ctx_;
  websocket::stream<Stream> ws_;
  beast::flat_buffer in_;
  WebSocketHandlers handlers_;
  std::deque<std::string> out_;
  bool open_ = false, reading_ = false, paused_ = false, writing_ = false, closing_ = false,
       ended_ = false;
};

}  // namespace mkube::http::detail
