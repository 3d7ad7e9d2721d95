#pragma once

// A watch of pods over the Kubernetes HTTP API (plain HTTP, chunked JSON lines), read on a
// shared Asio context: the HTTP side of watch_fanout. Each line's type is found without
// decoding the object; a sampled watcher reads the pod's bench/sent-ns annotation from it.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <string>
#include <string_view>

namespace bench {

class HttpWatch {
 public:
  // `on_lines` gets each whole line ('\n' excluded); returns false once it wants no more.
  HttpWatch(boost::asio::io_context& ioc, std::function<bool(std::string_view)> on_line,
            std::function<void()> on_end)
      : socket_(ioc), on_line_(std::move(on_line)), on_end_(std::move(on_end)) {}

  void Start(const boost::asio::ip::tcp::endpoint& server, const std::string& token,
             const std::string& target) {
    request_ = "GET " + target + " HTTP/1.1\r\nHost: bench\r\nAccept: application/json\r\n" +
               "Authorization: Bearer " + token + "\r\n\r\n";
    parser_.body_limit(boost::none);
    // Beast reads as much as the buffer has room for, 512 bytes into an empty one: room for
    // what a busy server sends at once makes one read of it, not dozens.
    buffer_.reserve(16 << 10);
    on_chunk_ = [this](uint64_t, std::string_view body, boost::beast::error_code&) {
      if (!body.empty()) ++chunks_;
      Feed(body);
      return body.size();
    };
    parser_.on_chunk_body(on_chunk_);  // the parser keeps a reference
    socket_.async_connect(server, [this](boost::beast::error_code ec) {
      if (ec) return End();
      boost::asio::async_write(socket_, boost::asio::buffer(request_),
                               [this](boost::beast::error_code ec, size_t) {
                                 if (ec) return End();
                                 Read();
                               });
    });
  }
  // The chunk bodies read (a chunk split across reads counts once per read).
  int64_t chunks() const { return chunks_; }
  // Ends the watch (from any thread); on_end follows.
  void Cancel() {
    boost::asio::post(socket_.get_executor(), [this] {
      done_ = true;
      boost::beast::error_code ignored;
      socket_.close(ignored);
    });
  }

 private:
  void Read() {
    boost::beast::http::async_read_some(
        socket_, buffer_, parser_, [this](boost::beast::error_code ec, size_t) {
          if (ec || done_ || parser_.is_done()) return End();
          Read();
        });
  }
  void Feed(std::string_view body) {
    partial_.append(body);
    size_t from = 0;
    for (size_t nl; !done_ && (nl = partial_.find('\n', from)) != std::string::npos; from = nl + 1) {
      done_ = !on_line_(std::string_view(partial_).substr(from, nl - from));
    }
    partial_.erase(0, from);
  }
  void End() {
    boost::beast::error_code ignored;
    socket_.close(ignored);
    if (auto f = std::move(on_end_)) f();
  }

  boost::asio::ip::tcp::socket socket_;
  std::function<bool(std::string_view)> on_line_;
  std::function<void()> on_end_;
  std::string request_;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::response_parser<boost::beast::http::empty_body> parser_;
  std::function<size_t(uint64_t, std::string_view, boost::beast::error_code&)> on_chunk_;
  std::string partial_;
  bool done_ = false;
  int64_t chunks_ = 0;
};

// An event line's type and, when asked, the pod's bench/sent-ns annotation (-1 if none):
// found in the text, not decoded (as the gRPC side scans its wire format).
inline bool IsAdded(std::string_view line) {
  return line.find("\"type\":\"ADDED\"") != std::string_view::npos;
}
inline int64_t SentNs(std::string_view line) {
  constexpr std::string_view kKey = "\"bench/sent-ns\":\"";
  const size_t at = line.find(kKey);
  if (at == std::string_view::npos) return -1;
  int64_t v = 0;
  for (size_t i = at + kKey.size(); i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
    v = v * 10 + (line[i] - '0');
  }
  return v;
}

}  // namespace bench
