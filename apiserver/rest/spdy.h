#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// The server side of SPDY/3.1 framing, as kubectl's port forwarding speaks it (over a
// WebSocket, or after an HTTP upgrade): frames parsed from the client's bytes, and the frames
// a server sends. Header blocks are compressed with zlib and the SPDY dictionary, one stream
// per direction for the whole connection, so frames that carry one must be sent in the order
// they were made. No flow control: the peers kubectl uses neither send nor honour windows.
namespace mkube::apiserver::rest::spdy {

enum class FrameType { kSynStream, kData, kRstStream, kPing, kGoAway, kIgnored };
inline constexpr uint8_t kFlagFin = 0x01;
// RST_STREAM status codes.
inline constexpr uint32_t kProtocolError = 1, kRefusedStream = 3, kCancel = 5;

struct Frame {
  FrameType type = FrameType::kIgnored;
  uint32_t stream = 0;  // stream id; the ping's id for a PING
  uint8_t flags = 0;
  std::map<std::string, std::string> headers;  // SYN_STREAM's, names in lower case
  std::string data;                             // DATA's payload
  uint32_t status = 0;                          // RST_STREAM's, GOAWAY's
  bool fin() const { return flags & kFlagFin; }
};

class Framer {
 public:
  // Frames larger than this are refused (a DATA frame may carry up to 16 MiB).
  explicit Framer(size_t max_frame = 16 << 20);
  ~Framer();
  Framer(const Framer&) = delete;
  Framer& operator=(const Framer&) = delete;

  // Takes the client's next bytes (frames may be split anywhere) and appends the frames they
  // complete. An error names what is malformed; the connection cannot go on after one.
  absl::Status Feed(std::string_view bytes, std::vector<Frame>* frames);

  std::string SynReply(uint32_t stream);  // with no headers
  static std::string Data(uint32_t stream, std::string_view data, bool fin);
  static std::string RstStream(uint32_t stream, uint32_t status);
  static std::string Ping(uint32_t id);
  static std::string GoAway(uint32_t last_stream, uint32_t status);

 private:
  absl::Status Parse(std::string_view frame, Frame* out);
  absl::StatusOr<std::string> Inflate(std::string_view block);

  struct Zlib;
  std::unique_ptr<Zlib> z_;
  const size_t max_frame_;
  std::string pending_;
};

}  // namespace mkube::apiserver::rest::spdy
