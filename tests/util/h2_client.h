#pragma once

#include <chrono>
#include <string>
#include <vector>

// An HTTP/2 client over TLS (ALPN h2) by libnghttp2's client session, for tests of servers:
// many requests at once on one connection, read to their ends or reset midway.
namespace mkube::testing::h2 {

struct Call {
  std::string method = "GET";
  std::string path;  // with its query
  std::string body;
  // Resets the stream (CANCEL) once this many bytes of the answer came; 0 reads to the end.
  size_t cancel_after = 0;

  // What came back.
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string got;
  bool closed = false;  // the stream ended (or was reset)
};

struct Connection {
  int port = 0;                         // on 127.0.0.1
  std::string client_cert, client_key;  // PEM files; none when empty
  std::chrono::milliseconds deadline = std::chrono::seconds(30);
};

// Runs every call at once on one connection until all have ended or the deadline has passed.
// The error names what failed (the handshake, the protocol chosen, the connection, time).
std::string RunCalls(const Connection& to, std::vector<Call>& calls);

}  // namespace mkube::testing::h2
