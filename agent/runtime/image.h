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

// An image's name as people write it: "nginx" and "latest", "127.0.0.1:5000/app" and "v1".
struct ImageRef {
  std::string name;
  std::string tag;  // or the digest ("sha256:...") of an image named by it
  std::string String() const { return name + ":" + tag; }
};

// What an image's config says about running it (every field optional).
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
  // The image's file tree as folders stacked, the topmost first (image::LayerView): its layers
  // where containers' roots are overlays of them, else one folder, `root`.
  std::vector<std::string> layers;
  std::string root;  // the one folder its layers were applied into; empty when layered
  ImageConfig config;
  int64_t size_bytes = 0;
  // The image's other names, for the node's status (as the kubelet reports them, so that a
  // pod naming it any of these ways finds it there): its other tags, each name in full
  // ("docker.io/library/nginx:latest"), and its digest form ("docker.io/library/nginx@sha256:..").
  std::vector<std::string> aliases;
  // What the container statuses' imageID says (the kubelet's): its digest in its repository
  // ("docker.io/library/nginx@sha256:...").
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

// Where images are kept and fetched from.
struct OciOptions {
  std::string dir;  // the content store's folder
  // Images are run from their layers' own folders, stacked by overlayfs (which needs root);
  // else each is applied into one folder first.
  bool layered = false;
  image::RegistryOptions registry;
};

// The node's images: OCI images pulled from their registries (or from the node's served
// archives) into its content store, or loaded from archives, and run from their layers
// (stacked, or applied into one tree).
class ImageStore {
 public:
  explicit ImageStore(OciOptions oci);

  // The image, pulled first when the node does not have it or `always` is set.
  // NotFound when the registry has no such image (the registry's reason in the message).
  absl::StatusOr<Image> Pull(const std::string& image, bool always) ABSL_LOCKS_EXCLUDED(list_mu_);
  // Whether the node holds the image.
  bool Present(const std::string& image) const;
  // Every image the node holds, one per content under all its names, for its status (read
  // from disk again only after a pull, load or removal changed it).
  std::vector<Image> List() const ABSL_LOCKS_EXCLUDED(list_mu_);
  // The images of a `docker save` archive or an OCI image layout, into the content store
  // (`what` names the archive in errors).
  absl::StatusOr<std::vector<LoadedImage>> LoadArchive(image::ArchiveSource source,
                                                       const std::string& what)
      ABSL_LOCKS_EXCLUDED(list_mu_);

  // Images the node can pull without a registry: the archive's images are kept apart, and a
  // pull of one of their names (Always included) takes it from there as from a registry that
  // holds it (the events say Pulling and Pulled, as for any pull). Before any pod runs.
  absl::Status ServeArchive(const std::string& file) ABSL_LOCKS_EXCLUDED(list_mu_);

  // The image the node holds under `image` (its name as a pod gives it), with its config;
  // NotFound when it has none.
  absl::StatusOr<image::PulledImage> Inspect(const std::string& image) const;

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
      ABSL_LOCKS_EXCLUDED(list_mu_, store_mu_);

 private:
  absl::StatusOr<Image> OciImage(const image::PulledImage& pulled);

  std::unique_ptr<image::ContentStore> oci_store_;
  std::unique_ptr<image::RegistryClient> oci_registry_;
  std::unique_ptr<image::Puller> puller_;
  // Guards the listing kept between changes.
  mutable absl::Mutex list_mu_;
  mutable std::optional<std::vector<Image>> listed_ ABSL_GUARDED_BY(list_mu_);
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
