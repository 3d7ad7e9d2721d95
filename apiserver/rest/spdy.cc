#include "apiserver/rest/spdy.h"

#include <zlib.h>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "fmt/format.h"

namespace mkube::apiserver::rest::spdy {
namespace {

#include "apiserver/rest/spdy_dictionary.inc"

constexpr uint16_t kVersion = 3;
enum ControlType : uint16_t {
  kSynStreamType = 1, kSynReplyType = 2, kRstStreamType = 3, kSettingsType = 4, kPingType = 6,
  kGoAwayType = 7, kHeadersType = 8, kWindowUpdateType = 9,
};
constexpr size_t kMaxHeaderBytes = 1 << 20;

uint32_t U32(std::string_view b, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(b[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(b[at + 3]));
}

void PutU32(std::string* out, uint32_t v) {
  out->push_back(static_cast<char>(v >> 24));
  out->push_back(static_cast<char>(v >> 16));
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v));
}

std::string ControlHeader(uint16_t type, uint8_t flags, size_t length) {
  std::string h;
  h.push_back(static_cast<char>(0x80 | (kVersion >> 8)));
  h.push_back(static_cast<char>(kVersion & 0xff));
  h.push_back(static_cast<char>(type >> 8));
  h.push_back(static_cast<char>(type & 0xff));
  h.push_back(static_cast<char>(flags));
  h.push_back(static_cast<char>(length >> 16));
  h.push_back(static_cast<char>(length >> 8));
  h.push_back(static_cast<char>(length));
  return h;
}

// A name/value block, decompressed: a count, then each name and value with its length.
absl::StatusOr<std::map<std::string, std::string>> ParseHeaders(std::string_view b) {
  std::map<std::string, std::string> out;
  if (b.size() < 4) return absl::InvalidArgumentError("a header block shorter than its count");
  const uint32_t n = U32(b, 0);
  size_t at = 4;
  for (uint32_t i = 0; i < n; ++i) {
    std::string pair[2];
    for (auto& s : pair) {
      if (at + 4 > b.size()) return absl::InvalidArgumentError("a header block ends inside a length");
      const uint32_t len = U32(b, at);
      at += 4;
      if (len > b.size() - at) return absl::InvalidArgumentError("a header longer than its block");
      s.assign(b.substr(at, len));
      at += len;
    }
    out[absl::AsciiStrToLower(pair[0])] = std::move(pair[1]);
  }
  return out;
}

}  // namespace

struct Framer::Zlib {
  z_stream in{};
  z_stream out{};
  Zlib() {
    inflateInit(&in);
    deflateInit(&out, Z_BEST_COMPRESSION);
    deflateSetDictionary(&out, kSpdyDictionary, sizeof kSpdyDictionary);
  }
  ~Zlib() {
    inflateEnd(&in);
    deflateEnd(&out);
  }
};

Framer::Framer(size_t max_frame) : z_(std::make_unique<Zlib>()), max_frame_(max_frame) {}
Framer::~Framer() = default;

absl::StatusOr<std::string> Framer::Inflate(std::string_view block) {
  z_stream& z = z_->in;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
  z.avail_in = static_cast<uInt>(block.size());
  std::string out;
  char buf[4096];
  // Until the input is used and the output did not fill the buffer (nothing more waits).
  for (bool more = z.avail_in > 0; more;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    int rc = inflate(&z, Z_SYNC_FLUSH);
    if (rc == Z_NEED_DICT) {
      if (inflateSetDictionary(&z, kSpdyDictionary, sizeof kSpdyDictionary) != Z_OK) {
        return absl::InvalidArgumentError("a header block compressed with another dictionary");
      }
      rc = Z_OK;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return absl::InvalidArgumentError(fmt::format("a header block that does not inflate ({})", rc));
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > kMaxHeaderBytes) return absl::InvalidArgumentError("a header block over 1 MiB");
    if (rc == Z_BUF_ERROR && z.avail_out != 0) break;  // no progress possible
    more = z.avail_in > 0 || z.avail_out == 0;
  }
  if (z.avail_in != 0) return absl::InvalidArgumentError("a header block with bytes left over");
  return out;
}

absl::Status Framer::Parse(std::string_view f, Frame* out) {
  const auto b0 = static_cast<uint8_t>(f[0]);
  out->flags = static_cast<uint8_t>(f[4]);
  if (!(b0 & 0x80)) {
    out->type = FrameType::kData;
    out->stream = U32(f, 0) & 0x7fffffff;
    if (out->stream == 0) return absl::InvalidArgumentError("a DATA frame on stream 0");
    out->data.assign(f.substr(8));
    return absl::OkStatus();
  }
  const uint16_t version = static_cast<uint16_t>(((b0 & 0x7f) << 8) | static_cast<uint8_t>(f[1]));
  if (version != kVersion) {
    return absl::InvalidArgumentError(fmt::format("SPDY version {} (this server speaks 3)", version));
  }
  const auto type = static_cast<uint16_t>((static_cast<uint8_t>(f[2]) << 8) | static_cast<uint8_t>(f[3]));
  const std::string_view body = f.substr(8);
  auto need = [&](size_t n) {
    return body.size() >= n ? absl::OkStatus()
                            : absl::InvalidArgumentError(fmt::format("a control frame of type {} too short", type));
  };
  switch (type) {
    case kSynStreamType: {
      if (auto st = need(10); !st.ok()) return st;
      out->type = FrameType::kSynStream;
      out->stream = U32(body, 0) & 0x7fffffff;
      auto block = Inflate(body.substr(10));
      if (!block.ok()) return block.status();
      auto headers = ParseHeaders(*block);
      if (!headers.ok()) return headers.status();
      out->headers = std::move(*headers);
      return absl::OkStatus();
    }
    case kSynReplyType:
    case kHeadersType: {  // not expected from a client; their block still moves the inflater on
      if (auto st = need(4); !st.ok()) return st;
      auto block = Inflate(body.substr(4));
      return block.ok() ? absl::OkStatus() : block.status();
    }
    case kRstStreamType:
      if (auto st = need(8); !st.ok()) return st;
      out->type = FrameType::kRstStream;
      out->stream = U32(body, 0) & 0x7fffffff;
      out->status = U32(body, 4);
      return absl::OkStatus();
    case kPingType:
      if (auto st = need(4); !st.ok()) return st;
      out->type = FrameType::kPing;
      out->stream = U32(body, 0);
      return absl::OkStatus();
    case kGoAwayType:
      if (auto st = need(8); !st.ok()) return st;
      out->type = FrameType::kGoAway;
      out->stream = U32(body, 0) & 0x7fffffff;
      out->status = U32(body, 4);
      return absl::OkStatus();
    case kSettingsType:
    case kWindowUpdateType:
      return absl::OkStatus();  // no flow control: see spdy.h
    default:
      return absl::InvalidArgumentError(fmt::format("a SPDY control frame of unknown type {}", type));
  }
}

absl::Status Framer::Feed(std::string_view bytes, std::vector<Frame>* frames) {
  pending_.append(bytes);
  size_t at = 0;
  while (pending_.size() - at >= 8) {
    const std::string_view head(pending_.data() + at, 8);
    const size_t length = (static_cast<size_t>(static_cast<uint8_t>(head[5])) << 16) |
                          (static_cast<size_t>(static_cast<uint8_t>(head[6])) << 8) |
                          static_cast<uint8_t>(head[7]);
    if (length > max_frame_) {
      return absl::InvalidArgumentError(fmt::format("a SPDY frame of {} bytes (at most {})", length, max_frame_));
    }
    if (pending_.size() - at < 8 + length) break;
    Frame f;
    if (auto st = Parse(std::string_view(pending_.data() + at, 8 + length), &f); !st.ok()) return st;
    if (f.type != FrameType::kIgnored) frames->push_back(std::move(f));
    at += 8 + length;
  }
  pending_.erase(0, at);
  return absl::OkStatus();
}

std::string Framer::SynReply(uint32_t stream) {
  const char none[4] = {0, 0, 0, 0};  // no headers
  z_stream& z = z_->out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(none));
  z.avail_in = sizeof none;
  std::string block;
  char buf[256];
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    deflate(&z, Z_SYNC_FLUSH);
    block.append(buf, sizeof buf - z.avail_out);
  } while (z.avail_out == 0);
  std::string f = ControlHeader(kSynReplyType, 0, 4 + block.size());
  PutU32(&f, stream & 0x7fffffff);
  return f + block;
}

std::string Framer::Data(uint32_t stream, std::string_view data, bool fin) {
  std::string f;
  PutU32(&f, stream & 0x7fffffff);
  f.push_back(static_cast<char>(fin ? kFlagFin : 0));
  f.push_back(static_cast<char>(data.size() >> 16));
  f.push_back(static_cast<char>(data.size() >> 8));
  f.push_back(static_cast<char>(data.size()));
  f.append(data);
  return f;
}

std::string Framer::RstStream(uint32_t stream, uint32_t status) {
  std::string f = ControlHeader(kRstStreamType, 0, 8);
  PutU32(&f, stream & 0x7fffffff);
  PutU32(&f, status);
  return f;
}

std::string Framer::Ping(uint32_t id) {
  std::string f = ControlHeader(kPingType, 0, 4);
  PutU32(&f, id);
  return f;
}

std::string Framer::GoAway(uint32_t last_stream, uint32_t status) {
  std::string f = ControlHeader(kGoAwayType, 0, 8);
  PutU32(&f, last_stream & 0x7fffffff);
  PutU32(&f, status);
  return f;
}

}  // namespace mkube::apiserver::rest::spdy
