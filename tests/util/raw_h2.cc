#include "tests/util/raw_h2.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

namespace mkube::testing::h2 {
namespace {

void AppendString(std::string_view s, std::string* out) {
  size_t n = s.size();
  if (n < 127) {
    out->push_back(static_cast<char>(n));
  } else {
    out->push_back(static_cast<char>(127));
    for (n -= 127; n >= 128; n >>= 7) out->push_back(static_cast<char>((n & 127) | 128));
    out->push_back(static_cast<char>(n));
  }
  out->append(s);
}

}  // namespace

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
  const size_t n = payload.size();
  std::string f = {static_cast<char>(n >> 16),
                   static_cast<char>(n >> 8),
                   static_cast<char>(n),
                   static_cast<char>(type),
                   static_cast<char>(flags),
                   static_cast<char>(stream >> 24),
                   static_cast<char>(stream >> 16),
                   static_cast<char>(stream >> 8),
                   static_cast<char>(stream)};
  f.append(payload);
  return f;
}

std::string Preface(std::string_view settings, bool ack) {
  return std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + Frame(kSettings, 0, 0, settings) +
         (ack ? Frame(kSettings, 1, 0, "") : "");
}

void AppendLiteral(std::string_view name, std::string_view value, std::string* block) {
  block->push_back('\0');
  AppendString(name, block);
  AppendString(value, block);
}

std::string CallHeaders(uint32_t stream, std::string_view path, std::string_view encoding,
                        std::string_view timeout) {
  std::string block;
  AppendLiteral(":method", "POST", &block);
  AppendLiteral(":scheme", "http", &block);
  AppendLiteral(":path", path, &block);
  AppendLiteral(":authority", "test", &block);
  AppendLiteral("content-type", "application/grpc", &block);
  AppendLiteral("te", "trailers", &block);
  if (!encoding.empty()) AppendLiteral("grpc-encoding", encoding, &block);
  if (!timeout.empty()) AppendLiteral("grpc-timeout", timeout, &block);
  return Frame(kHeaders, kEndHeaders, stream, block);
}

std::string DataFrames(uint32_t stream, std::string_view bytes, bool end_stream) {
  std::string out;
  for (size_t pos = 0; pos < bytes.size() || pos == 0; pos += 16384) {
    const bool last = pos + 16384 >= bytes.size();
    out += Frame(kData, last && end_stream ? kEndStream : 0, stream, bytes.substr(pos, 16384));
  }
  return out;
}

HeaderDecoder::HeaderDecoder() { nghttp2_hd_inflate_new(&inflater_); }
HeaderDecoder::~HeaderDecoder() { nghttp2_hd_inflate_del(inflater_); }

bool HeaderDecoder::Decode(std::string_view block,
                           const std::function<void(std::string_view, std::string_view)>& field) {
  const auto* in = reinterpret_cast<const uint8_t*>(block.data());
  size_t left = block.size();
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
    if (n < 0) return false;
    in += n;
    left -= static_cast<size_t>(n);
    if (flags & NGHTTP2_HD_INFLATE_EMIT) {
      field(std::string_view(reinterpret_cast<const char*>(nv.name), nv.namelen),
            std::string_view(reinterpret_cast<const char*>(nv.value), nv.valuelen));
    }
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(inflater_);
      return true;
    }
    if (n == 0 && left == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT)) return false;
  }
}

sockaddr_in Ipv4Address(const std::string& address) {
  const auto colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
  return sa;
}

int ConnectTcp(const std::string& address) {
  sockaddr_in sa = Ipv4Address(address);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace mkube::testing::h2
