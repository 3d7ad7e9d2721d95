#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

// An image layer (a tar archive: plain, gzip or zstd) unpacked into a folder, with its OCI
// whiteouts: ".wh.NAME" deletes NAME from the layers below, ".wh..wh..opq" hides everything a
// folder held below.
namespace mkube::agent::image {

enum class Whiteouts {
  // The layer keeps its own folder, as a lower layer of an overlay: a deleted name becomes
  // overlayfs' whiteout (a 0:0 character device) and a hidden folder gets
  // trusted.overlay.opaque=y. Needs root.
  kOverlay,
  // The layer is unpacked over the layers below it in one folder: deleted names are removed,
  // and a hidden folder loses what the layers below had put in it.
  kApply,
};

struct LayerStats {
  int64_t entries = 0;
  int64_t bytes = 0;  // of regular files
  int64_t whiteouts = 0;
};

// Unpacks the layer in file `blob` into the folder `dest` (made if missing). Symbolic links on
// an entry's way are followed as the image sees them (an absolute target from the image's
// root, ".." no higher than it), so none leads out of `dest`. Entries named outside it
// (absolute paths, "..") are refused: the error names the entry, and what was unpacked before
// it stays for the caller to remove.
absl::StatusOr<LayerStats> UnpackLayer(const std::string& blob, const std::string& dest,
                                       Whiteouts whiteouts);

}  // namespace mkube::agent::image
