#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

typedef struct evp_md_ctx_st EVP_MD_CTX;

// Content digests as OCI names them: "sha256:" and 64 lower-case hex digits.
namespace mkube::agent::image {

// SHA-256 over bytes given in pieces.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t n);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  // "sha256:<hex>" of everything given; the hasher is spent after.
  std::string Finish();

 private:
  EVP_MD_CTX* ctx_;
};

std::string Sha256Of(std::string_view data);

// The hex part of a "sha256:<hex>" digest (a file name in the content store); empty when
// `digest` is not one.
std::string DigestHex(std::string_view digest);

}  // namespace mkube::agent::image
