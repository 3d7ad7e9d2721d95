#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

// Images made from files on this machine (how the demo images are built, with no download):
// each image one layer holding the files it names, at the paths it gives them (with the
// shared libraries a program loads, as ldd names them, at their own paths, when asked), the
// links it names, and a link for each applet of a busybox it holds. Written as an OCI image
// layout tarball, which `mkube-agent --image-archive` and `mkubectl image load` read.
namespace mkube::agent::image {

struct ImageFile {
  std::string from;  // on this machine
  std::string to;    // in the image (absolute)
  bool libraries = false;
};

struct ImageSpec {
  std::string name;  // a reference: "busybox:latest", "soscscs/myapp:v1"
  std::vector<ImageFile> files;
  std::map<std::string, std::string> links;  // path in the image -> its target
  std::string busybox;                       // a file's path in the image: links to its applets
  nlohmann::json config = nlohmann::json::object();  // Entrypoint, Cmd, Env, ExposedPorts, ...
};

// The images of a spec: a JSON list of {"name", "files": [{"from", "to", "libraries"}],
// "links": {PATH: TARGET}, "busybox": PATH, "config": {...}}. "${NAME}" in any string is
// vars[NAME] (an unknown name is an error).
absl::StatusOr<std::vector<ImageSpec>> ParseImageSpecs(
    const std::string& json, const std::map<std::string, std::string>& vars);

struct BuiltImage {
  std::string name, digest;
  int64_t files = 0, bytes = 0;
};
// Writes the images as one OCI image layout tarball at `out` (written beside it and renamed
// into place). Files are stored with their modes, owned by root, dated 1970: the same files
// make the same digests.
absl::StatusOr<std::vector<BuiltImage>> WriteImageLayout(const std::vector<ImageSpec>& images,
                                                         const std::string& out);

}  // namespace mkube::agent::image
