#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

// HPACK (RFC 7541), as much as a gRPC server needs: a full decoder (static and dynamic
// tables, Huffman strings) and an encoder that writes literals without indexing, so it keeps
// no state.
namespace mkube::store::rpc::hpack {

// Appends value as an HPACK integer with a prefix of prefix_bits bits; `flags` fills the
// first byte's bits above the prefix.
void EncodeInteger(uint8_t flags, int prefix_bits, uint64_t value, std::string* out);
// Appends a field as a literal without indexing, name and value as raw strings.
void EncodeLiteral(std::string_view name, std::string_view value, std::string* out);
// Same, the name given by its index in the static table.
void EncodeLiteral(int name_index, std::string_view value, std::string* out);

// Huffman coding of string literals (RFC 7541 Appendix B).
void HuffmanEncode(std::string_view in, std::string* out);
absl::Status HuffmanDecode(std::string_view in, std::string* out);

// Decodes the header blocks of one connection, in order (the dynamic table carries over).
class Decoder {
 public:
  // The table size our SETTINGS allow (HTTP/2's default).
  explicit Decoder(size_t max_table_size = 4096) : limit_(max_table_size), max_(max_table_size) {}

  // Calls on_field for each field of a whole header block. An error is a compression error:
  // the connection cannot go on.
  absl::Status Decode(std::string_view block,
                      absl::FunctionRef<void(std::string_view, std::string_view)> on_field);

  size_t table_size() const { return size_; }
  size_t table_entries() const { return table_.size(); }

 private:
  absl::Status Lookup(uint64_t index, const std::string** name, const std::string** value) const;
  void Insert(std::string name, std::string value);
  void Evict();

  const size_t limit_;  // what SETTINGS_HEADER_TABLE_SIZE allows
  size_t max_;          // what the encoder last chose, up to limit_
  size_t size_ = 0;
  std::deque<std::pair<std::string, std::string>> table_;  // newest first
};

}  // namespace mkube::store::rpc::hpack
