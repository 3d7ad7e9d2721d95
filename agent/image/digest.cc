#include "agent/image/digest.h"

#include <openssl/evp.h>

#include "absl/strings/ascii.h"

namespace mkube::agent::image {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(const void* data, size_t n) { EVP_DigestUpdate(ctx_, data, n); }

std::string Sha256::Finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, md, &n);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::string Sha256Of(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.Finish();
}

std::string DigestHex(std::string_view digest) {
  constexpr std::string_view kPrefix = "sha256:";
  if (digest.substr(0, kPrefix.size()) != kPrefix || digest.size() != kPrefix.size() + 64)
    return "";
  const std::string_view hex = digest.substr(kPrefix.size());
  for (char ch : hex) {
    if (!absl::ascii_isdigit(ch) && !(ch >= 'a' && ch <= 'f')) return "";
  }
  return std::string(hex);
}

}  // namespace mkube::agent::image
