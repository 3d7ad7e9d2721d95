// libFuzzer target: HPACK header blocks (RFC 7541) through the store's decoder, several
// blocks per input so the dynamic table carries over, and Huffman strings on their own.
#include <cstdint>
#include <string>
#include <string_view>

#include "store/rpc/hpack.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace hpack = mkube::store::rpc::hpack;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // Blocks are separated by "\n--\n"; the first byte picks the table size our SETTINGS allow.
  hpack::Decoder decoder(in.empty() ? 4096 : static_cast<uint8_t>(in[0]) * 64);
  size_t fields = 0;
  for (size_t pos = in.empty() ? 0 : 1; pos <= in.size();) {
    size_t end = in.find("\n--\n", pos);
    if (end == std::string_view::npos) end = in.size();
    const std::string_view block = in.substr(pos, end - pos);
    const absl::Status st =
        decoder.Decode(block, [&](std::string_view name, std::string_view value) {
          fields += name.size() + value.size();
        });
    if (!st.ok()) break;  // a compression error ends the connection
    pos = end + 4;
  }
  std::string text;
  if (hpack::HuffmanDecode(in, &text).ok()) {
    std::string again;
    hpack::HuffmanEncode(text, &again);
    std::string back;
    if (!hpack::HuffmanDecode(again, &back).ok() || back != text) __builtin_trap();
  }
  (void)fields;
  return 0;
}
