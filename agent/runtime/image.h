#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

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

// What an image says about running it (its image.json; every field optional).
struct ImageConfig {
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::vector<std::string> env;  // "NAME=value"
  std::string user;              // "UID" or "UID:GID"; empty: unsaid
};

// A pulled image on this node.
struct Image {
  ImageRef ref;
  std::string root;  // folder holding the image's files
  ImageConfig config;
  int64_t size_bytes = 0;
};

// The node's image store. Images come from a registry folder (<registry>/<name>/<tag>/, with
// an optional image.json); pulling copies one into the node's own folder, so what a node has
// pulled is really there (and stays there while the registry changes). A pull of an image the
// node holds in the same version (same files, sizes and times) copies nothing.
class ImageStore {
 public:
  ImageStore(std::string registry_dir, std::string store_dir)
      : registry_(std::move(registry_dir)), store_(std::move(store_dir)) {}

  // The image, pulled first when the node does not have it or `always` is set.
  // NotFound when the registry has no such image.
  absl::StatusOr<Image> Pull(const std::string& image, bool always) ABSL_LOCKS_EXCLUDED(pull_mu_);
  // Whether the node holds the image.
  bool Present(const std::string& image) const;
  // Every image the node holds, for its status (read from disk again only after a pull
  // changed it).
  std::vector<Image> List() const ABSL_LOCKS_EXCLUDED(pull_mu_);

 private:
  absl::StatusOr<Image> Load(const ImageRef& ref) const;

  const std::string registry_, store_;
  // One pull at a time, so two pods starting together do not copy over each other.
  mutable absl::Mutex pull_mu_;
  mutable std::optional<std::vector<Image>> listed_ ABSL_GUARDED_BY(pull_mu_);
};

}  // namespace mkube::agent::runtime
