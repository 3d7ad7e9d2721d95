#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

typedef struct nghttp2_hd_inflater nghttp2_hd_inflater;

// HTTP/2 written by hand, for tests that play clients no library would be (floods, clients
// that never read, protocol violations): frames, a gRPC call's HEADERS, and a decoder for the
// server's header blocks.
namespace mkube::testing::h2 {

inline constexpr uint8_t kData = 0, kHeaders = 1, kSettings = 4, kPing = 6, kGoaway = 7;
inline constexpr uint8_t kEndStream = 0x1, kEndHeaders = 0x4;

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload);
// The preface, our SETTINGS (`settings`: the payload), and at once the ACK of the server's
// (which every server sends first), so that its larger windows are in force before our first
// DATA, as for a gRPC client that has read them.
std::string Preface(std::string_view settings = "", bool ack = true);
// A field as an HPACK literal without indexing (RFC 7541 6.2.2).
void AppendLiteral(std::string_view name, std::string_view value, std::string* block);
// A gRPC call's HEADERS frame; `encoding` as its grpc-encoding, `timeout` as its grpc-timeout.
std::string CallHeaders(uint32_t stream, std::string_view path, std::string_view encoding = "",
                        std::string_view timeout = "");
// `bytes` in DATA frames of the default largest size, the last one ending the stream if asked.
std::string DataFrames(uint32_t stream, std::string_view bytes, bool end_stream);

// The server's header blocks of one connection, decoded in order (nghttp2's inflater).
class HeaderDecoder {
 public:
  HeaderDecoder();
  ~HeaderDecoder();
  HeaderDecoder(const HeaderDecoder&) = delete;
  HeaderDecoder& operator=(const HeaderDecoder&) = delete;

  // Calls `field` for each field of a whole header block; false if it does not decode.
  bool Decode(std::string_view block,
              const std::function<void(std::string_view, std::string_view)>& field);

 private:
  nghttp2_hd_inflater* inflater_ = nullptr;
};

// HOST:PORT (IPv4) as a socket address.
sockaddr_in Ipv4Address(const std::string& address);
// A blocking TCP connection to HOST:PORT (IPv4); -1 if it cannot be made.
int ConnectTcp(const std::string& address);

}  // namespace mkube::testing::h2
