#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/image/manifest.h"
#include "agent/image/reference.h"
#include "agent/image/registry.h"
#include "agent/image/store.h"
#include "base/platform.h"

// Images pulled into the node's content store: the manifest a name stands for (through an
// index, the node's platform's), its config and its layers, each blob fetched only when the
// store lacks it and kept only when it matches its digest.
namespace mkube::agent::image {

struct PulledImage {
  Reference ref;
  std::string digest;           // what the name stands for: the index's, or the manifest's
  std::string manifest_digest;  // the platform's manifest
  std::string config_digest;
  ImageConfig config;
  std::vector<std::string> layers;  // blob digests, lowest first
  int64_t size_bytes = 0;           // of the blobs, as registries count an image's size
};

class Puller {
 public:
  Puller(ContentStore* store, RegistryClient* registry, std::string os = "linux",
         std::string architecture = HostArchitecture())
      : store_(store),
        registry_(registry),
        os_(std::move(os)),
        architecture_(std::move(architecture)) {}

  // Pulls the image `ref` names; pulls of one name at the same time share one. A layer that
  // arrives corrupt is fetched once more before the pull fails. A pull that takes a while
  // says how far it has come in the log every few seconds.
  absl::StatusOr<PulledImage> Pull(const Reference& ref);
  // The image as the node already holds it; NotFound when it does not (or not whole).
  absl::StatusOr<PulledImage> Local(const Reference& ref) const;

 private:
  absl::StatusOr<PulledImage> PullOnce(const Reference& ref);
  // What a pull has fetched of what it must, for its progress lines.
  struct Progress;
  absl::StatusOr<std::string> Fetch(const Reference& ref, const Descriptor& d, Progress* progress);
  // The platform's manifest and the image's config, from a document the store holds.
  absl::StatusOr<PulledImage> Read(const Reference& ref, const std::string& digest) const;

  ContentStore* const store_;
  RegistryClient* const registry_;
  const std::string os_, architecture_;
  std::mutex mu_;
  std::map<std::string, std::shared_future<absl::StatusOr<PulledImage>>> pulling_;
};

}  // namespace mkube::agent::image
