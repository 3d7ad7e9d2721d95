// SPDY/3.1 framing as kubectl's port forwarding speaks it: frames from a client (compressed
// header blocks, frames split anywhere), and the server's frames read back as a client would.
#include "apiserver/rest/spdy.h"

#include <gtest/gtest.h>
#include <zlib.h>

namespace mkube::apiserver::rest::spdy {
namespace {

#include "apiserver/rest/spdy_dictionary.inc"

// The client's side of the header compression: one zlib stream for the connection.
class ClientZlib {
 public:
  ClientZlib() {
    deflateInit(&out_, Z_BEST_COMPRESSION);
    deflateSetDictionary(&out_, kSpdyDictionary, sizeof kSpdyDictionary);
    inflateInit(&in_);
  }
  ~ClientZlib() {
    deflateEnd(&out_);
    inflateEnd(&in_);
  }
  std::string Deflate(const std::string& raw) {
    out_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
    out_.avail_in = static_cast<uInt>(raw.size());
    std::string out;
    char buf[1024];
    do {
      out_.next_out = reinterpret_cast<Bytef*>(buf);
      out_.avail_out = sizeof buf;
      deflate(&out_, Z_SYNC_FLUSH);
      out.append(buf, sizeof buf - out_.avail_out);
    } while (out_.avail_out == 0);
    return out;
  }
  std::string Inflate(const std::string& block) {
    in_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
    in_.avail_in = static_cast<uInt>(block.size());
    std::string out;
    char buf[1024];
    while (in_.avail_in > 0) {
      in_.next_out = reinterpret_cast<Bytef*>(buf);
      in_.avail_out = sizeof buf;
      if (inflate(&in_, Z_SYNC_FLUSH) == Z_NEED_DICT) {
        inflateSetDictionary(&in_, kSpdyDictionary, sizeof kSpdyDictionary);
        continue;
      }
      out.append(buf, sizeof buf - in_.avail_out);
    }
    return out;
  }

 private:
  z_stream out_{}, in_{};
};

std::string U32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string Headers(const std::vector<std::pair<std::string, std::string>>& h) {
  std::string b = U32(static_cast<uint32_t>(h.size()));
  for (const auto& [k, v] : h) b += U32(k.size()) + k + U32(v.size()) + v;
  return b;
}

std::string Control(uint16_t type, uint8_t flags, const std::string& body) {
  return std::string{'\x80', '\x03', static_cast<char>(type >> 8), static_cast<char>(type)} +
         std::string{static_cast<char>(flags), static_cast<char>(body.size() >> 16),
                     static_cast<char>(body.size() >> 8), static_cast<char>(body.size())} +
         body;
}

std::string SynStream(ClientZlib& z, uint32_t id, const std::vector<std::pair<std::string, std::string>>& h) {
  return Control(1, 0, U32(id) + U32(0) + std::string(2, '\0') + z.Deflate(Headers(h)));
}

TEST(Spdy, TheDictionaryIsSpdy3s) {
  EXPECT_EQ(sizeof kSpdyDictionary, 1423u);
  EXPECT_EQ(adler32(1, kSpdyDictionary, sizeof kSpdyDictionary), 0xE3C6A7C2u);
}

TEST(Spdy, ReadsAPortForwardersFramesFedAByteAtATime) {
  ClientZlib z;
  // In turn: the header blocks share one compression stream.
  std::string bytes = SynStream(z, 1, {{"streamtype", "error"}, {"port", "80"}, {"requestid", "0"}});
  bytes += Framer::Data(1, "", true);
  bytes += SynStream(z, 3, {{"Port", "80"}, {"streamtype", "data"}, {"requestid", "0"}});
  bytes += Framer::Data(3, "GET / HTTP/1.0\r\n\r\n", false) + Framer::Ping(1) +
      Control(9, 0, U32(3) + U32(1000)) +  // WINDOW_UPDATE: no flow control, ignored
      Framer::RstStream(3, kCancel) + Framer::GoAway(3, 0);
  Framer f;
  std::vector<Frame> frames;
  for (char c : bytes) {
    auto st = f.Feed(std::string(1, c), &frames);
    ASSERT_TRUE(st.ok()) << st;
  }
  ASSERT_EQ(frames.size(), 7u);
  EXPECT_EQ(frames[0].type, FrameType::kSynStream);
  EXPECT_EQ(frames[0].stream, 1u);
  EXPECT_EQ(frames[0].headers, (std::map<std::string, std::string>{
                                   {"port", "80"}, {"requestid", "0"}, {"streamtype", "error"}}));
  EXPECT_EQ(frames[1].type, FrameType::kData);
  EXPECT_TRUE(frames[1].fin());
  EXPECT_EQ(frames[2].headers.at("port"), "80");  // names read in lower case
  EXPECT_EQ(frames[2].headers.at("streamtype"), "data");
  EXPECT_EQ(frames[3].data, "GET / HTTP/1.0\r\n\r\n");
  EXPECT_FALSE(frames[3].fin());
  EXPECT_EQ(frames[4].type, FrameType::kPing);
  EXPECT_EQ(frames[4].stream, 1u);
  EXPECT_EQ(frames[5].type, FrameType::kRstStream);
  EXPECT_EQ(frames[5].status, kCancel);
  EXPECT_EQ(frames[6].type, FrameType::kGoAway);
}

TEST(Spdy, RepliesCarryAnEmptyHeaderBlockOnOneCompressionStream) {
  Framer f;
  ClientZlib z;
  for (uint32_t id : {1u, 3u, 5u}) {
    const std::string reply = f.SynReply(id);
    ASSERT_GE(reply.size(), 12u);
    EXPECT_EQ(reply.substr(0, 4), std::string("\x80\x03\x00\x02", 4));
    const size_t length = (static_cast<uint8_t>(reply[5]) << 16) |
                          (static_cast<uint8_t>(reply[6]) << 8) | static_cast<uint8_t>(reply[7]);
    EXPECT_EQ(length, reply.size() - 8);
    EXPECT_EQ(reply.substr(8, 4), U32(id));
    EXPECT_EQ(z.Inflate(reply.substr(12)), std::string(4, '\0'));
  }
}

TEST(Spdy, RefusesWhatIsNotSpdy3) {
  Framer f;
  std::vector<Frame> frames;
  EXPECT_FALSE(f.Feed(std::string{'\x80', '\x02', '\x00', '\x01', 0, 0, 0, 0}, &frames).ok());
  Framer g;
  EXPECT_FALSE(g.Feed(Control(5, 0, ""), &frames).ok());  // NOOP: unknown in SPDY/3
  Framer small(16);
  EXPECT_FALSE(small.Feed(Framer::Data(1, std::string(17, 'x'), false), &frames).ok());
  Framer h;
  // A SYN_STREAM whose header block is not zlib at all.
  EXPECT_FALSE(h.Feed(Control(1, 0, U32(1) + U32(0) + std::string(2, '\0') + "garbage!"), &frames).ok());
  EXPECT_TRUE(frames.empty());
}

}  // namespace
}  // namespace mkube::apiserver::rest::spdy
