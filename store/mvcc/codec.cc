#include "store/mvcc/codec.h"

namespace mkube::store::mvcc {
namespace {
constexpr char kEscape = '\x00';
constexpr char kEscapedZero = '\xff';
constexpr char kTerminator = '\x01';
}  // namespace

void AppendBigEndian64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

uint64_t ReadBigEndian64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

std::string EncodeRevision(Revision rev) {
  std::string out;
  out.reserve(16);
  AppendBigEndian64(&out, static_cast<uint64_t>(rev.main));
  AppendBigEndian64(&out, static_cast<uint64_t>(rev.sub));
  return out;
}

std::optional<Revision> DecodeRevision(std::string_view in) {
  if (in.size() != 16) return std::nullopt;
  return Revision{static_cast<int64_t>(ReadBigEndian64(in)),
                  static_cast<int64_t>(ReadBigEndian64(in.substr(8)))};
}

void AppendEscapedKey(std::string* out, std::string_view user_key) {
  for (char c : user_key) {
    out->push_back(c);
    if (c == kEscape) out->push_back(kEscapedZero);
  }
  out->push_back(kEscape);
  out->push_back(kTerminator);
}

std::string EncodeKeyEntry(std::string_view user_key, int64_t main) {
  std::string out;
  out.reserve(user_key.size() + 10);
  AppendEscapedKey(&out, user_key);
  AppendBigEndian64(&out, ~static_cast<uint64_t>(main));
  return out;
}

std::optional<KeyEntry> DecodeKeyEntry(std::string_view in) {
  KeyEntry entry;
  size_t i = 0;
  while (i < in.size()) {
    char c = in[i];
    if (c != kEscape) {
      entry.user_key.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= in.size()) return std::nullopt;
    if (in[i + 1] == kEscapedZero) {
      entry.user_key.push_back(kEscape);
      i += 2;
      continue;
    }
    if (in[i + 1] != kTerminator) return std::nullopt;
    i += 2;
    if (in.size() - i != 8) return std::nullopt;
    entry.main = static_cast<int64_t>(~ReadBigEndian64(in.substr(i)));
    return entry;
  }
  return std::nullopt;
}

}  // namespace mkube::store::mvcc
