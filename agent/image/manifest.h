#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

// The documents of an image as registries and OCI layouts hold them: indexes (manifest lists)
// naming a manifest per platform, manifests naming a config and layers, and the config saying
// how to run the image. Docker's schema 2 and OCI's forms are read alike.
namespace mkube::agent::image {

inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kDockerList =
    "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerManifest =
    "application/vnd.docker.distribution.manifest.v2+json";
// What a registry is asked for, in order of preference.
inline constexpr std::string_view kManifestAccept =
    "application/vnd.oci.image.index.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.v2+json";

// Content named by its digest.
struct Descriptor {
  std::string media_type;
  std::string digest;
  int64_t size = 0;
  // For an index's entries.
  std::string os, architecture, variant;
};

struct Manifest {
  Descriptor config;
  std::vector<Descriptor> layers;  // lowest first
};

struct Index {
  std::vector<Descriptor> manifests;
};

// One of the two, as the document (or, when it names none, the registry's Content-Type)
// says.
struct Document {
  bool is_index = false;
  Index index;
  Manifest manifest;
};
absl::StatusOr<Document> ParseDocument(std::string_view json, std::string_view content_type = "");

// The index's manifest for `os`/`architecture` (a node's own: linux/amd64). NotFound names
// the platforms the index has.
absl::StatusOr<Descriptor> ForPlatform(const Index& index, std::string_view os,
                                       std::string_view architecture);

// How to run the image (its config's "config"), and what its layers unpack to.
struct ImageConfig {
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::vector<std::string> env;  // "NAME=value"
  std::string working_dir;
  std::string user;                        // "name", "uid", "uid:gid" or "name:group"; empty: root
  std::vector<std::string> exposed_ports;  // "80/tcp"
  std::vector<std::string> diff_ids;       // each layer's uncompressed digest, lowest first
  std::string os, architecture;
};
absl::StatusOr<ImageConfig> ParseImageConfig(std::string_view json);

}  // namespace mkube::agent::image
