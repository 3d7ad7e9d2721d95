#pragma once

#include <memory>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/image/archive_import.h"
#include "agent/image/puller.h"

namespace mkube::agent::runtime {

// An image reference split as a registry path: "soscscs/myapp:v1" → {"soscscs/myapp", "v1"};
// the tag defaults to "latest"; "docker.io/" and "library/" prefixes are dropped, so "nginx",
// "library/nginx" and "docker.io/library/nginx:latest" name the same image.
struct ImageRef {
  std::string name;
  std::string tag;
  std::string String() const { return name + ":" + tag; }
};
absl::StatusOr<ImageRef> ParseImageRef(const std::string& image);

// What an image says about running it (its image.json, or an OCI image's config; every field
// optional).
struct ImageConfig {
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::vector<std::string> env;  // "NAME=value"
  std::string user;              // "UID" or "UID:GID"; empty: unsaid
  std::string working_dir;       // empty: unsaid
};

// A pulled image on this node.
struct Image {
  ImageRef ref;
  // The image's file tree as folders stacked, the topmost first (image::LayerView): an OCI
  // image's layers where containers' roots are overlays of them, else one folder, `root`.
  std::vector<std::string> layers;
  std::string root;  // the one folder holding the image's files; empty when layered
  ImageConfig config;
  int64_t size_bytes = 0;
  // An OCI image brings its whole file tree: the node's system folders are not added to it.
  bool own_root = false;
  // The image's other names, for the node's status (as the kubelet reports them, so that a
  // pod naming it any of these ways finds it there): its other tags, each name in full
  // ("docker.io/library/nginx:latest"), and its digest form ("docker.io/library/nginx@sha256:..").
  std::vector<std::string> aliases;
  // What the container statuses' imageID says (the kubelet's): for an OCI image its digest in
  // its repository ("docker.io/library/nginx@sha256:..."); empty: the name.
  std::string id;
};

// An image loaded from an archive.
struct LoadedImage {
  std::vector<std::string> names;  // as people write them: "app:v1"
  std::string digest;
  int64_t size_bytes = 0;
};

// An OCI image in the node's content store: one content, under every name it has.
struct StoredImage {
  std::string digest;  // what the names stand for
  std::vector<std::string> names;
  int64_t size_bytes = 0;
};

// Where OCI images are kept and fetched from.
struct OciOptions {
  std::string dir;  // the content store's folder; empty: registry folder images only
  // Images are run from their layers' own folders, stacked by overlayfs (which needs root);
  // else each is applied into one folder first.
  bool layered = false;
  image::RegistryOptions registry;
};

// The node's image store. Images come from a registry folder (<registry>/<name>/<tag>/, with
// an optional image.json); pulling copies one into the node's own folder, so what a node has
// pulled is really there (and stays there while the registry changes). A pull of an image the
// node holds in the same version (same files, sizes and times) copies nothing. Any other image
// is an OCI image: pulled from its registry into the content store, or loaded from an archive,
// and run from its layers (stacked, or applied into one tree).
class ImageStore {
 public:
  ImageStore(std::string registry_dir, std::string store_dir, OciOptions oci = {});

  // The image, pulled first when the node does not have it or `always` is set.
  // NotFound when the registry has no such image.
  absl::StatusOr<Image> Pull(const std::string& image, bool always) ABSL_LOCKS_EXCLUDED(pull_mu_);
  // Whether the node holds the image.
  bool Present(const std::string& image) const;
  // Every image the node holds, for its status (read from disk again only after a pull
  // changed it).
  std::vector<Image> List() const ABSL_LOCKS_EXCLUDED(pull_mu_);
  // The images of a `docker save` archive or an OCI image layout, into the content store
  // (`what` names the archive in errors). FailedPrecondition without a content store.
  absl::StatusOr<std::vector<LoadedImage>> LoadArchive(image::ArchiveSource source,
                                                       const std::string& what)
      ABSL_LOCKS_EXCLUDED(pull_mu_);

  // Images the node can pull without a registry: the archive's images are kept apart, and a
  // pull of one of their names (Always included) takes it from there as from a registry that
  // holds it (the events say Pulling and Pulled, as for any pull). Before any pod runs.
  absl::Status ServeArchive(const std::string& file) ABSL_LOCKS_EXCLUDED(pull_mu_);

  // The content store's images, for garbage collection.
  std::vector<StoredImage> StoredImages() const;
  // The contents these image names stand for on this node (names it lacks are left out; a
  // name with a digest stands for that digest).
  std::set<std::string> DigestsOf(const std::vector<std::string>& names) const;
  // Removes the image `digest` under all its names, and whatever only it used, unless
  // `in_use` names it (FailedPrecondition): the images its names stand for (and the digests they
  // give) are asked for once no pull or load is under way, and kept. The bytes freed on disk;
  // Unavailable, without waiting, while a pull or load is under way (ask again later).
  absl::StatusOr<int64_t> Remove(const std::string& digest,
                                 const std::function<std::vector<std::string>()>& in_use)
      ABSL_LOCKS_EXCLUDED(pull_mu_, store_mu_);

 private:
  absl::StatusOr<Image> Load(const ImageRef& ref) const;
  // Whether `image` is one of the registry folder's (or was pulled from it).
  bool FromFolder(const std::string& image) const;
  absl::StatusOr<Image> PullOci(const std::string& image, bool always);
  absl::StatusOr<Image> OciImage(const image::PulledImage& pulled);

  const std::string registry_, store_;
  std::unique_ptr<image::ContentStore> oci_store_;
  std::unique_ptr<image::RegistryClient> oci_registry_;
  std::unique_ptr<image::Puller> puller_;
  // One pull at a time, so two pods starting together do not copy over each other.
  mutable absl::Mutex pull_mu_;
  mutable std::optional<std::vector<Image>> listed_ ABSL_GUARDED_BY(pull_mu_);
  // Pulls and loads write to the content store together (readers); a removal sweeps it alone
  // (the writer), so that no blob of a pull under way is taken for garbage.
  mutable absl::Mutex store_mu_;
  // ServeArchive's images: a content store of their own, which pulls of their names (full
  // references in served_, set before pods run) copy from as from a registry.
  std::unique_ptr<image::ContentStore> served_store_;
  std::unique_ptr<image::Puller> served_puller_;
  std::set<std::string> served_;
  std::string oci_dir_;
  bool layered_ = false;
};

}  // namespace mkube::agent::runtime
