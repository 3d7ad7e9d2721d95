#include "controller/internal/template_hash.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace mkube::controller {

std::string TemplateHash(const api::PodTemplateSpec& tmpl, std::optional<int32_t> collision_count) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    tmpl.SerializeToCodedStream(&coded);
  }
  uint32_t h = 2166136261u;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 16777619u;
  };
  for (unsigned char c : bytes) mix(c);
  if (collision_count) {
    const uint32_t n = static_cast<uint32_t>(*collision_count);
    for (int i = 0; i < 4; ++i) mix(static_cast<unsigned char>(n >> (8 * i)));
  }
  // Kubernetes' SafeEncodeString of the decimal number: no vowels, no look-alike characters.
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out = std::to_string(h);
  for (auto& c : out) c = kAlphabet[static_cast<unsigned char>(c) % (sizeof(kAlphabet) - 1)];
  return out;
}

}  // namespace mkube::controller
