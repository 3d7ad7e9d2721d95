#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/image/credentials.h"
#include "agent/image/reference.h"

// A client of the Distribution API (v2) that registries speak (Docker Hub, registry.k8s.io,
// Debian's docker-registry): manifests by tag or digest, blobs streamed, with the bearer-token
// and basic authentication registries ask for. HTTPS, or plain HTTP for the registries it is
// told are insecure; HTTP/1.1 (by libcurl).
namespace mkube::agent::image {

struct RegistryOptions {
  // Hosts ("HOST:PORT" as references name them) spoken to in plain HTTP.
  std::set<std::string> insecure;
  // Per registry host: what to answer its requests for credentials with (asked at each
  // authentication, so it may change); none when not set.
  std::function<std::optional<Credentials>(const std::string& registry)> credentials;
  // A file of CA certificates for HTTPS beside the system's; empty: the system's only.
  std::string ca_file;
  std::chrono::seconds connect_timeout{15};
  // A transfer slower than 1 KiB/s for this long is given up.
  std::chrono::seconds stall_timeout{60};
};

class RegistryClient {
 public:
  explicit RegistryClient(RegistryOptions options) : options_(std::move(options)) {}

  struct Manifest {
    std::string body;
    std::string content_type;
    std::string digest;  // of `body`, checked against what the registry says
  };
  // The manifest (or index) `selector` (a tag or a digest) names in `ref`'s repository. A
  // digest asked for is checked against the bytes that came.
  absl::StatusOr<Manifest> GetManifest(const Reference& ref, const std::string& selector);

  // Blob `digest` of `ref`'s repository, its bytes handed to `sink` as they come (a sink's
  // error ends the transfer with it).
  absl::Status GetBlob(const Reference& ref, const std::string& digest,
                       const std::function<absl::Status(std::string_view)>& sink);

 private:
  struct Answer;
  // One GET with the repository's token (fetched, or asked again, when the registry says 401).
  absl::StatusOr<Answer> Get(const Reference& ref, const std::string& path,
                             const std::string& accept,
                             const std::function<absl::Status(std::string_view)>* sink);
  absl::StatusOr<Answer> Once(const std::string& url, const std::string& accept,
                              const std::string& authorization,
                              const std::function<absl::Status(std::string_view)>* sink);
  absl::StatusOr<std::string> Authorize(const Reference& ref, const std::string& challenge);
  std::string Base(const Reference& ref) const;

  const RegistryOptions options_;
  std::mutex mu_;
  std::map<std::string, std::string> authorization_;  // by registry/repository
};

// The parameters of a WWW-Authenticate challenge: scheme ("bearer", lower case) and its
// key="value" pairs.
struct Challenge {
  std::string scheme;
  std::map<std::string, std::string> params;
};
Challenge ParseChallenge(std::string_view header);

}  // namespace mkube::agent::image
