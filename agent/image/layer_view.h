#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// An image's file tree as overlayfs shows it, read without mounting anything: its layers'
// folders stacked, the topmost first. A folder of a higher layer merges with the same folder
// below; any other entry hides what lies below it; a whiteout (a 0:0 character device) hides
// the name, and an opaque folder (trusted.overlay.opaque=y) everything that lower layers put in
// it. One folder (a tree applied whole) is a stack of one.
namespace mkube::agent::image {

class LayerView {
 public:
  explicit LayerView(std::vector<std::string> layers) : layers_(std::move(layers)) {}

  // The node path holding `path` of the tree (from its root; "/" or "" is the root itself),
  // with the tree's symbolic links on the way followed as a container would (an absolute target
  // from the tree's root, ".." no higher than it), the last one too when `follow`. nullopt:
  // not in the tree, or a loop of links.
  std::optional<std::string> Find(std::string_view path, bool follow = true) const;

  // The names in the tree's folder `path` (its links followed); empty when it is none.
  std::set<std::string> List(std::string_view path) const;

  const std::vector<std::string>& layers() const { return layers_; }

 private:
  // The node path of `parts` (a path in the tree with no link on the way but maybe the last).
  std::optional<std::string> Lookup(const std::vector<std::string>& parts) const;

  std::vector<std::string> layers_;
};

// `path` (from a tree's root) as the parts of the path it leads to, with the tree's symbolic
// links on the way followed as a container would (an absolute target from the tree's root,
// ".." no higher than it), the last one too when `follow`. `at` gives the node path of a path
// of the tree (its parts), nullopt when the tree lacks it: a missing name ends the walk with
// nullopt, unless `missing_ok`, where it stays as written. nullopt too past 40 links (a loop).
using NodePathOf = std::function<std::optional<std::string>(const std::vector<std::string>&)>;
std::optional<std::vector<std::string>> ResolveLinks(std::string_view path, bool follow,
                                                     bool missing_ok, const NodePathOf& at);

}  // namespace mkube::agent::image
