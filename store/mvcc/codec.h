#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// Byte layouts of mkube-store's RocksDB keys. Every encoding is order-preserving so RocksDB's
// bytewise order is the order the store needs:
//
//   "history" family: <main:8 BE><sub:8 BE> -> the version written there (see reader.h)
//   "meta" family:    short tagged records (see meta.h)
//
// Key entries, <escaped user key><0x00 0x01><~main:8 BE>, are the keys of the first format's
// "key" family (each key's history, newest first); they are read only to migrate such stores.
namespace mkube::store::mvcc {

struct Revision {
  int64_t main = 0;
  int64_t sub = 0;
  friend bool operator==(const Revision&, const Revision&) = default;
  friend auto operator<=>(const Revision&, const Revision&) = default;
};

enum class EntryType : char { kPut = 'p', kTombstone = 'd' };

void AppendBigEndian64(std::string* out, uint64_t v);
uint64_t ReadBigEndian64(std::string_view in);

std::string EncodeRevision(Revision rev);
std::optional<Revision> DecodeRevision(std::string_view in);

// Escapes 0x00 as 0x00 0xFF and terminates with 0x00 0x01: a prefix of a key then sorts
// before the key, just as raw bytes do, and the terminator separates the key from its suffix.
void AppendEscapedKey(std::string* out, std::string_view user_key);

// The key-family key of user_key at main revision `main`.
std::string EncodeKeyEntry(std::string_view user_key, int64_t main);

struct KeyEntry {
  std::string user_key;
  int64_t main = 0;
};
std::optional<KeyEntry> DecodeKeyEntry(std::string_view in);

}  // namespace mkube::store::mvcc
