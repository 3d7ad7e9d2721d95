#include "store/rpc/hpack.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace mkube::store::rpc::hpack {
namespace {

std::string Hex(std::string_view hex) {
  std::string out;
  std::string digits;
  for (char c : hex) {
    if (c != ' ') digits.push_back(c);
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

using Fields = std::vector<std::pair<std::string, std::string>>;

Fields DecodeAll(Decoder& d, const std::string& block) {
  Fields out;
  auto st = d.Decode(block, [&](std::string_view n, std::string_view v) {
    out.emplace_back(std::string(n), std::string(v));
  });
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

TEST(Huffman, StringsOfTheRfcExamples) {
  struct Case {
    std::string text;
    std::string hex;
  };
  const std::vector<Case> cases = {
      {"www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"},
      {"no-cache", "a8eb 1064 9cbf"},
      {"custom-key", "25a8 49e9 5ba9 7d7f"},
      {"custom-value", "25a8 49e9 5bb8 e8b4 bf"},
  };
  for (const auto& c : cases) {
    std::string encoded;
    HuffmanEncode(c.text, &encoded);
    EXPECT_EQ(encoded, Hex(c.hex)) << c.text;
    std::string decoded;
    ASSERT_TRUE(HuffmanDecode(Hex(c.hex), &decoded).ok());
    EXPECT_EQ(decoded, c.text);
  }
}

TEST(Huffman, EveryByteRoundTrips) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  std::string encoded, decoded;
  HuffmanEncode(all, &encoded);
  ASSERT_TRUE(HuffmanDecode(encoded, &decoded).ok());
  EXPECT_EQ(decoded, all);
}

TEST(Huffman, BadPaddingAndEosAreRefused) {
  std::string out;
  // 'a' is 00011 (5 bits); padding with zeros instead of ones.
  EXPECT_FALSE(HuffmanDecode(std::string("\x18", 1), &out).ok());
  // A whole byte of padding after a symbol: more than 7 bits.
  out.clear();
  EXPECT_FALSE(HuffmanDecode(Hex("1f ff"), &out).ok());
  // EOS itself (30 ones).
  out.clear();
  EXPECT_FALSE(HuffmanDecode(Hex("ff ff ff ff"), &out).ok());
}

TEST(Integer, EncodesAndDecodesAcrossThePrefix) {
  std::string out;
  EncodeInteger(0, 5, 10, &out);
  EXPECT_EQ(out, Hex("0a"));
  out.clear();
  EncodeInteger(0, 5, 1337, &out);  // RFC 7541 C.1.2
  EXPECT_EQ(out, Hex("1f 9a 0a"));
}

// RFC 7541 C.4: three requests on one connection, Huffman-coded, sharing the dynamic table.
TEST(Decoder, RequestsOfTheRfcShareTheDynamicTable) {
  Decoder d;
  EXPECT_EQ(DecodeAll(d, Hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff")),
            (Fields{{":method", "GET"},
                    {":scheme", "http"},
                    {":path", "/"},
                    {":authority", "www.example.com"}}));
  EXPECT_EQ(d.table_size(), 57u);
  EXPECT_EQ(DecodeAll(d, Hex("8286 84be 5886 a8eb 1064 9cbf")),
            (Fields{{":method", "GET"},
                    {":scheme", "http"},
                    {":path", "/"},
                    {":authority", "www.example.com"},
                    {"cache-control", "no-cache"}}));
  EXPECT_EQ(d.table_size(), 110u);
  EXPECT_EQ(
      DecodeAll(d, Hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf")),
      (Fields{{":method", "GET"},
              {":scheme", "https"},
              {":path", "/index.html"},
              {":authority", "www.example.com"},
              {"custom-key", "custom-value"}}));
  EXPECT_EQ(d.table_size(), 164u);
  EXPECT_EQ(d.table_entries(), 3u);
}

TEST(Decoder, EvictsOldestEntriesAndObeysSizeUpdates) {
  Decoder d(100);
  // Two literals with incremental indexing, new names: each entry is 32 + 2 + 2 = 36 bytes.
  std::string block;
  for (const char* name : {"aa", "bb", "cc"}) {
    block.push_back(0x40);
    block.push_back(2);
    block += name;
    block.push_back(2);
    block += "vv";
  }
  DecodeAll(d, block);
  EXPECT_EQ(d.table_entries(), 2u);  // "aa" evicted
  // Index 62 is the newest entry.
  EXPECT_EQ(DecodeAll(d, Hex("be bf")), (Fields{{"cc", "vv"}, {"bb", "vv"}}));
  // A size update to 0 empties the table; above the limit is an error.
  DecodeAll(d, Hex("20"));
  EXPECT_EQ(d.table_entries(), 0u);
  EXPECT_FALSE(d.Decode(Hex("3f 56"), [](auto, auto) {}).ok());  // 31 + 86 = 117 > 100
}

TEST(Decoder, MalformedBlocksAreCompressionErrors) {
  Decoder d;
  auto ignore = [](std::string_view, std::string_view) {};
  EXPECT_FALSE(d.Decode(Hex("80"), ignore).ok());     // index 0
  EXPECT_FALSE(d.Decode(Hex("ff 00"), ignore).ok());  // index 127: no such entry
  EXPECT_FALSE(d.Decode(Hex("40 05 61"), ignore).ok());  // string longer than the block
  EXPECT_FALSE(d.Decode(Hex("ff"), ignore).ok());     // integer cut short
  EXPECT_FALSE(d.Decode(Hex("82 20"), ignore).ok());  // size update after a field
}

TEST(Encoder, LiteralsDecodeBack) {
  std::string block;
  EncodeLiteral("grpc-status", "0", &block);
  EncodeLiteral(31, "application/grpc", &block);
  Decoder d;
  EXPECT_EQ(DecodeAll(d, block),
            (Fields{{"grpc-status", "0"}, {"content-type", "application/grpc"}}));
  EXPECT_EQ(d.table_entries(), 0u);
}

}  // namespace
}  // namespace mkube::store::rpc::hpack
