#include "store/mvcc/meta.h"

#include "fmt/format.h"
#include "store/mvcc/codec.h"

namespace mkube::store::mvcc {

std::string Encode64(int64_t v) {
  std::string out;
  AppendBigEndian64(&out, static_cast<uint64_t>(v));
  return out;
}

absl::Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::UnavailableError(fmt::format("mkube-store: {}: {}", what, s.ToString()));
}

}  // namespace mkube::store::mvcc
