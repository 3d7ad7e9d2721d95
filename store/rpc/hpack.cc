#include "store/rpc/hpack.h"

#include <algorithm>
#include <array>
#include <vector>

namespace mkube::store::rpc::hpack {
namespace {

struct StaticEntry {
  std::string name;
  std::string value;
};

// RFC 7541 Appendix A; index 1 is the first entry.
const std::vector<StaticEntry>& StaticTable() {
  static const auto* table = new std::vector<StaticEntry>{
      {":authority", ""}, {":method", "GET"}, {":method", "POST"}, {":path", "/"},
      {":path", "/index.html"}, {":scheme", "http"}, {":scheme", "https"}, {":status", "200"},
      {":status", "204"}, {":status", "206"}, {":status", "304"}, {":status", "400"},
      {":status", "404"}, {":status", "500"}, {"accept-charset", ""},
      {"accept-encoding", "gzip, deflate"}, {"accept-language", ""}, {"accept-ranges", ""},
      {"accept", ""}, {"access-control-allow-origin", ""}, {"age", ""}, {"allow", ""},
      {"authorization", ""}, {"cache-control", ""}, {"content-disposition", ""},
      {"content-encoding", ""}, {"content-language", ""}, {"content-length", ""},
      {"content-location", ""}, {"content-range", ""}, {"content-type", ""}, {"cookie", ""},
      {"date", ""}, {"etag", ""}, {"expect", ""}, {"expires", ""}, {"from", ""}, {"host", ""},
      {"if-match", ""}, {"if-modified-since", ""}, {"if-none-match", ""}, {"if-range", ""},
      {"if-unmodified-since", ""}, {"last-modified", ""}, {"link", ""}, {"location", ""},
      {"max-forwards", ""}, {"proxy-authenticate", ""}, {"proxy-authorization", ""},
      {"range", ""}, {"referer", ""}, {"refresh", ""}, {"retry-after", ""}, {"server", ""},
      {"set-cookie", ""}, {"strict-transport-security", ""}, {"transfer-encoding", ""},
      {"user-agent", ""}, {"vary", ""}, {"via", ""}, {"www-authenticate", ""}};
  return *table;
}

// The Huffman code is canonical: the code lengths of the 256 bytes and EOS (RFC 7541
// Appendix B) determine every code.
constexpr std::array<uint8_t, 257> kCodeLength = {
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28,
    30, 28, 28, 28, 28, 28, 28, 28, 28, 28, 6,  10, 10, 12, 13, 6,  8,  11, 10, 10, 8,  11,
    8,  6,  6,  6,  5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8,  15, 6,  12, 10, 13, 6,
    7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,
    8,  7,  8,  13, 19, 13, 14, 6,  15, 5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,
    6,  5,  6,  7,  6,  5,  5,  6,  7,  7,  7,  7,  7,  15, 11, 14, 13, 28, 20, 22, 20, 20,
    22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21,
    22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23,
    22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26,
    28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27,
    26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30};
constexpr int kEos = 256;

struct Huffman {
  std::array<uint32_t, 257> code{};
  // Decoding tree: node i has children child[i][0..1]; a leaf is stored as -(symbol + 1).
  std::vector<std::array<int32_t, 2>> child;

  Huffman() {
    std::array<int, 257> order;
    for (int i = 0; i < 257; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [](int a, int b) { return kCodeLength[a] < kCodeLength[b]; });
    uint32_t next = 0;
    int len = kCodeLength[order[0]];
    for (int sym : order) {
      next <<= kCodeLength[sym] - len;
      len = kCodeLength[sym];
      code[sym] = next++;
    }
    child.push_back({0, 0});
    for (int sym = 0; sym < 257; ++sym) {
      int node = 0;
      for (int bit = kCodeLength[sym] - 1; bit >= 0; --bit) {
        const int b = (code[sym] >> bit) & 1;
        if (bit == 0) {
          child[node][b] = -(sym + 1);
        } else {
          if (child[node][b] == 0) {
            child[node][b] = static_cast<int32_t>(child.size());
            child.push_back({0, 0});
          }
          node = child[node][b];
        }
      }
    }
  }
};

const Huffman& Codes() {
  static const auto* h = new Huffman();
  return *h;
}

absl::Status CompressionError(std::string_view what) {
  return absl::InvalidArgumentError(std::string("hpack: ") + std::string(what));
}

// Reads an integer with an n-bit prefix at in[*pos].
absl::Status ReadInteger(std::string_view in, size_t* pos, int prefix_bits, uint64_t* out) {
  if (*pos >= in.size()) return CompressionError("truncated integer");
  const uint64_t max_prefix = (1u << prefix_bits) - 1;
  uint64_t value = static_cast<uint8_t>(in[*pos]) & max_prefix;
  ++*pos;
  if (value < max_prefix) {
    *out = value;
    return absl::OkStatus();
  }
  for (int shift = 0;; shift += 7) {
    if (*pos >= in.size()) return CompressionError("truncated integer");
    if (shift > 56) return CompressionError("integer too large");
    const uint8_t b = static_cast<uint8_t>(in[*pos]);
    ++*pos;
    value += static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
  }
  *out = value;
  return absl::OkStatus();
}

absl::Status ReadString(std::string_view in, size_t* pos, std::string* out) {
  if (*pos >= in.size()) return CompressionError("truncated string");
  const bool huffman = (static_cast<uint8_t>(in[*pos]) & 0x80) != 0;
  uint64_t len = 0;
  if (auto st = ReadInteger(in, pos, 7, &len); !st.ok()) return st;
  if (len > in.size() - *pos) return CompressionError("string longer than its block");
  const std::string_view raw = in.substr(*pos, len);
  *pos += len;
  out->clear();
  if (!huffman) {
    out->assign(raw);
    return absl::OkStatus();
  }
  return HuffmanDecode(raw, out);
}

size_t EntrySize(const std::string& name, const std::string& value) {
  return name.size() + value.size() + 32;
}

}  // namespace

void EncodeInteger(uint8_t flags, int prefix_bits, uint64_t value, std::string* out) {
  const uint64_t max_prefix = (1u << prefix_bits) - 1;
  if (value < max_prefix) {
    out->push_back(static_cast<char>(flags | value));
    return;
  }
  out->push_back(static_cast<char>(flags | max_prefix));
  value -= max_prefix;
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void EncodeLiteral(std::string_view name, std::string_view value, std::string* out) {
  out->push_back(0);  // literal without indexing, new name
  EncodeInteger(0, 7, name.size(), out);
  out->append(name);
  EncodeInteger(0, 7, value.size(), out);
  out->append(value);
}

void EncodeLiteral(int name_index, std::string_view value, std::string* out) {
  EncodeInteger(0, 4, name_index, out);
  EncodeInteger(0, 7, value.size(), out);
  out->append(value);
}

void HuffmanEncode(std::string_view in, std::string* out) {
  const Huffman& h = Codes();
  uint64_t bits = 0;
  int count = 0;
  for (unsigned char c : in) {
    bits = (bits << kCodeLength[c]) | h.code[c];
    count += kCodeLength[c];
    while (count >= 8) {
      count -= 8;
      out->push_back(static_cast<char>(bits >> count));
    }
  }
  if (count > 0) {  // pad with the most significant bits of EOS (all ones)
    out->push_back(static_cast<char>((bits << (8 - count)) | (0xff >> count)));
  }
}

absl::Status HuffmanDecode(std::string_view in, std::string* out) {
  const Huffman& h = Codes();
  int node = 0;
  int depth = 0;       // bits read since the last symbol
  bool all_ones = true;  // and whether they were all ones
  for (unsigned char byte : in) {
    for (int bit = 7; bit >= 0; --bit) {
      const int b = (byte >> bit) & 1;
      const int32_t next = h.child[node][b];
      ++depth;
      all_ones = all_ones && b == 1;
      if (next < 0) {
        const int sym = -next - 1;
        if (sym == kEos) return CompressionError("EOS in a Huffman string");
        out->push_back(static_cast<char>(sym));
        node = 0;
        depth = 0;
        all_ones = true;
      } else if (next == 0) {
        return CompressionError("bad Huffman code");
      } else {
        node = next;
      }
    }
  }
  if (depth > 7 || !all_ones) return CompressionError("bad Huffman padding");
  return absl::OkStatus();
}

absl::Status Decoder::Lookup(uint64_t index, const std::string** name,
                             const std::string** value) const {
  const auto& fixed = StaticTable();
  if (index == 0) return CompressionError("index 0");
  if (index <= fixed.size()) {
    *name = &fixed[index - 1].name;
    *value = &fixed[index - 1].value;
    return absl::OkStatus();
  }
  const uint64_t dyn = index - fixed.size() - 1;
  if (dyn >= table_.size()) return CompressionError("index beyond the tables");
  *name = &table_[dyn].first;
  *value = &table_[dyn].second;
  return absl::OkStatus();
}

void Decoder::Evict() {
  while (size_ > max_ && !table_.empty()) {
    size_ -= EntrySize(table_.back().first, table_.back().second);
    table_.pop_back();
  }
}

void Decoder::Insert(std::string name, std::string value) {
  const size_t entry = EntrySize(name, value);
  if (entry > max_) {  // an entry larger than the table empties it (RFC 7541 4.4)
    table_.clear();
    size_ = 0;
    return;
  }
  size_ += entry;
  table_.emplace_front(std::move(name), std::move(value));
  Evict();
}

absl::Status Decoder::Decode(
    std::string_view block, absl::FunctionRef<void(std::string_view, std::string_view)> on_field) {
  size_t pos = 0;
  bool fields_seen = false;
  std::string name, value;
  while (pos < block.size()) {
    const uint8_t b = static_cast<uint8_t>(block[pos]);
    if (b & 0x80) {  // indexed field
      uint64_t index = 0;
      if (auto st = ReadInteger(block, &pos, 7, &index); !st.ok()) return st;
      const std::string *n, *v;
      if (auto st = Lookup(index, &n, &v); !st.ok()) return st;
      on_field(*n, *v);
      fields_seen = true;
      continue;
    }
    if ((b & 0xe0) == 0x20) {  // dynamic table size update, only before the first field
      if (fields_seen) return CompressionError("table size update after a field");
      uint64_t size = 0;
      if (auto st = ReadInteger(block, &pos, 5, &size); !st.ok()) return st;
      if (size > limit_) return CompressionError("table size update above the limit");
      max_ = size;
      Evict();
      continue;
    }
    // A literal: with incremental indexing (01), without indexing (0000) or never indexed
    // (0001).
    const bool index_it = (b & 0xc0) == 0x40;
    const int prefix = index_it ? 6 : 4;
    uint64_t name_index = 0;
    if (auto st = ReadInteger(block, &pos, prefix, &name_index); !st.ok()) return st;
    if (name_index == 0) {
      if (auto st = ReadString(block, &pos, &name); !st.ok()) return st;
    } else {
      const std::string *n, *v;
      if (auto st = Lookup(name_index, &n, &v); !st.ok()) return st;
      name = *n;
    }
    if (auto st = ReadString(block, &pos, &value); !st.ok()) return st;
    on_field(name, value);
    fields_seen = true;
    if (index_it) Insert(name, value);
  }
  return absl::OkStatus();
}

}  // namespace mkube::store::rpc::hpack
