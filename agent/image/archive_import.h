#pragma once

#include <functional>
#include <string>
#include <string_view>
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

// The archive's bytes in turn: each call gives the next piece (valid until the next call),
// empty at the end; an error ends the import with it.
using ArchiveSource = std::function<absl::StatusOr<std::string_view>()>;
// The same from a stream; `what` names it in errors.
absl::StatusOr<std::vector<ImportedImage>> ImportArchive(ArchiveSource source,
                                                         const std::string& what,
                                                         ContentStore* store);

}  // namespace mkube::agent::image
