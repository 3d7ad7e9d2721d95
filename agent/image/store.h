#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/image/digest.h"
#include "agent/image/layer.h"
#include "agent/image/reference.h"

// A node's images by content, in one folder:
//   blobs/sha256/HEX     manifests, configs and layers as fetched, each kept once
//   layers/sha256/HEX/   a layer blob unpacked, once
//   roots/HEX/           an image's layers applied into one tree, once (by manifest digest)
//   refs/REGISTRY/REPOSITORY/tags/TAG and .../digests/HEX: the manifest a name stands for
// A blob lands under its name only once its bytes hash to it, and a layer's folder only once
// it is whole: a cut download or a crash leaves nothing that looks complete.
namespace mkube::agent::image {

class ContentStore {
 public:
  explicit ContentStore(std::string root) : root_(std::move(root)) {}

  // A blob being written: hashed as it comes, renamed into place by Commit when its digest
  // (and size, when known) is the one promised, or under the digest it has when none was.
  // Dropped uncommitted, it leaves nothing.
  class BlobWriter {
   public:
    ~BlobWriter();
    absl::Status Write(std::string_view bytes);
    absl::Status Commit();
    // After Commit: the blob's digest.
    const std::string& digest() const { return digest_; }

   private:
    friend class ContentStore;
    BlobWriter(ContentStore* store, std::string digest, int64_t size, std::string tmp, int fd)
        : store_(store), digest_(std::move(digest)), size_(size), tmp_(std::move(tmp)), fd_(fd) {}
    ContentStore* const store_;
    std::string digest_;
    const int64_t size_;
    const std::string tmp_;
    int fd_;
    int64_t written_ = 0;
    Sha256 hash_;
    bool done_ = false;
  };

  // `size` < 0: not known beforehand. `digest` empty: whatever the bytes hash to.
  absl::StatusOr<std::unique_ptr<BlobWriter>> NewBlob(const std::string& digest, int64_t size = -1);
  absl::Status PutBlob(const std::string& digest, std::string_view bytes);
  bool HasBlob(const std::string& digest) const;
  // Blob `digest` of `other` into this store (a link to the same file when both are on one
  // filesystem: blobs are never changed in place), unless this store has it.
  absl::Status CopyBlobFrom(const ContentStore& other, const std::string& digest);
  std::string BlobPath(const std::string& digest) const;
  // A small blob (a manifest, a config), checked against its digest again.
  absl::StatusOr<std::string> ReadBlob(const std::string& digest, size_t max = 4 << 20) const;

  // The folder of the layer blob `digest`, unpacked on first use.
  absl::StatusOr<std::string> Layer(const std::string& digest, Whiteouts whiteouts);

  // One folder holding an image's whole file tree: its layers (blob digests, lowest first)
  // applied in turn, made on first use under `roots/HEX` of the image's manifest digest. For
  // nodes where a container's root cannot be an overlay of the layers themselves.
  absl::StatusOr<std::string> Root(const std::string& manifest_digest,
                                   const std::vector<std::string>& layers);

  // The manifest digest `ref` names on this node (by its digest, else its tag).
  absl::Status SetRef(const Reference& ref, const std::string& manifest_digest);
  std::optional<std::string> Ref(const Reference& ref) const;
  // Every tagged name the node holds.
  std::vector<Reference> Tags() const;
  // Every name (tags and digests) with the manifest digest it stands for.
  std::vector<std::pair<Reference, std::string>> Refs() const;
  absl::Status RemoveRef(const Reference& ref);

  // Removes whatever no name and no digest of `keep` (images containers still use, whatever
  // their names stand for now) reaches: blobs (indexes, manifests, configs, layers), unpacked
  // layers, image roots, and files a crash left half-written. Nothing may be written to the
  // store meanwhile; when the names cannot all be read, nothing is removed. Returns the bytes
  // freed.
  int64_t Sweep(const std::set<std::string>& keep = {});

 private:
  std::string RefPath(const Reference& ref) const;
  // Every name, as Refs; false when the folder could not be read whole.
  bool ListRefs(std::vector<std::pair<Reference, std::string>>* out) const;
  const std::string root_;
};

}  // namespace mkube::agent::image
