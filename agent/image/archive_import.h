#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/image/store.h"

// Images loaded from an archive into the node's content store, as `kind load` does: a
// `docker save` archive (manifest.json, each image's config and layer tars) or an OCI image
// layout (oci-layout, index.json, blobs/sha256/...), plain or gzip'd. Every blob is kept by
// the digest of its bytes (an OCI layout's blob must hash to its name), and the images' names
// are recorded last, once all they need is in the store.
namespace mkube::agent::image {

struct ImportedImage {
  std::vector<std::string> names;  // as references name them ("docker.io/library/app:v1")
  std::string digest;              // of the manifest (or index) the names stand for
};

absl::StatusOr<std::vector<ImportedImage>> ImportArchive(const std::string& file,
                                                         ContentStore* store);

}  // namespace mkube::agent::image
