#include "api/object.h"

#include "absl/time/clock.h"

#include <chrono>
#include <ctime>
#include <random>

#include "fmt/format.h"
#include "google/protobuf/util/message_differencer.h"

namespace mkube::api {
namespace {

const google::protobuf::FieldDescriptor* Field(const google::protobuf::Message& m,
                                               const char* name) {
  return m.GetDescriptor()->FindFieldByName(name);
}

}  // namespace

const ObjectMeta& MetaOf(const google::protobuf::Message& obj) {
  return static_cast<const ObjectMeta&>(
      obj.GetReflection()->GetMessage(obj, Field(obj, "metadata")));
}

ObjectMeta* MutableMetaOf(google::protobuf::Message* obj) {
  return static_cast<ObjectMeta*>(
      obj->GetReflection()->MutableMessage(obj, Field(*obj, "metadata")));
}

bool Equal(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

bool SameMap(const google::protobuf::Map<std::string, std::string>& a,
             const google::protobuf::Map<std::string, std::string>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second != v) return false;
  }
  return true;
}

bool SameSpec(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  const auto* f = Field(a, "spec");
  if (!f) return true;
  return Equal(a.GetReflection()->GetMessage(a, f), b.GetReflection()->GetMessage(b, f));
}

void CopyPart(const google::protobuf::Message& from, google::protobuf::Message* to,
              const char* part) {
  const auto* f = Field(from, part);
  if (!f) return;
  const auto* r = from.GetReflection();
  if (r->HasField(from, f)) {
    to->GetReflection()->MutableMessage(to, f)->CopyFrom(r->GetMessage(from, f));
  } else {
    to->GetReflection()->ClearField(to, f);
  }
}

void SetTypeMeta(google::protobuf::Message* obj, const std::string& api_version,
                 const std::string& kind) {
  const auto* r = obj->GetReflection();
  r->SetString(obj, Field(*obj, "api_version"), api_version);
  r->SetString(obj, Field(*obj, "kind"), kind);
}

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::string NowRfc3339() { return Rfc3339(absl::Now()); }

std::optional<absl::Time> ParseRfc3339(const std::string& rfc3339) {
  absl::Time t;
  std::string err;
  if (rfc3339.empty() || !absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) {
    return std::nullopt;
  }
  return t;
}

std::string NewUid() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const uint64_t a = rng(), b = rng();
  // A version 4, variant 1 UUID.
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                     ((b >> 48) & 0x3fff) | 0x8000, b & 0xffffffffffffULL);
}

}  // namespace mkube::api
