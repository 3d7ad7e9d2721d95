#include "agent/image/layer_view.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <deque>
#include <filesystem>

#include "absl/strings/str_split.h"

namespace mkube::agent::image {
namespace {

// How many links one lookup follows before calling it a loop (as Linux's MAXSYMLINKS).
constexpr int kMaxLinks = 40;

bool IsOpaque(const std::string& dir) {
  char value[2] = {};
  return getxattr(dir.c_str(), "trusted.overlay.opaque", value, sizeof(value)) == 1 &&
         value[0] == 'y';
}

// overlayfs' whiteout: a 0:0 character device.
bool IsWhiteout(const struct stat& st) {
  return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
}

bool IsWhiteout(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && IsWhiteout(st);
}

std::string Under(const std::string& layer, const std::vector<std::string>& parts, size_t n) {
  std::string out = layer;
  for (size_t i = 0; i < n; ++i) out += "/" + parts[i];
  return out;
}

// What one layer says of a path (its parts) on a walk down from the layer's root.
struct Walk {
  bool found = false;   // the layer has it
  bool hidden = false;  // a whiteout or a file of this layer, at it or on the way, hides it
  bool opaque = false;  // an opaque folder of this layer on the way hides the layers below
};

Walk WalkLayer(const std::string& layer, const std::vector<std::string>& parts) {
  Walk w;
  for (size_t depth = 0; depth <= parts.size(); ++depth) {
    const std::string at = Under(layer, parts, depth);
    struct stat st;
    if (lstat(at.c_str(), &st) != 0) return w;  // not in this layer
    if (IsWhiteout(st)) {
      w.hidden = true;
      return w;
    }
    if (depth == parts.size()) {
      w.found = true;
      return w;
    }
    if (!S_ISDIR(st.st_mode)) {
      w.hidden = true;
      return w;
    }
    if (depth > 0 && IsOpaque(at)) w.opaque = true;
  }
  return w;
}

}  // namespace

std::optional<std::string> LayerView::Lookup(const std::vector<std::string>& parts) const {
  for (const auto& layer : layers_) {
    const Walk w = WalkLayer(layer, parts);
    if (w.found) return Under(layer, parts, parts.size());
    if (w.hidden || w.opaque) return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::vector<std::string>> ResolveLinks(std::string_view path, bool follow,
                                                     bool missing_ok, const NodePathOf& at) {
  std::vector<std::string> done;
  std::deque<std::string> todo;
  for (absl::string_view p :
       absl::StrSplit(absl::string_view(path.data(), path.size()), '/', absl::SkipEmpty())) {
    todo.emplace_back(p);
  }
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    done.push_back(std::move(part));
    if (todo.empty() && !follow) break;
    auto node = at(done);
    if (!node && !missing_ok) return std::nullopt;
    struct stat st;
    if (!node || lstat(node->c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) continue;
    if (++links > kMaxLinks) return std::nullopt;
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(*node, ec).string();
    if (ec) return std::nullopt;
    done.pop_back();
    if (!target.empty() && target.front() == '/') done.clear();
    std::vector<std::string> parts = absl::StrSplit(target, '/', absl::SkipEmpty());
    todo.insert(todo.begin(), parts.begin(), parts.end());
  }
  return done;
}

std::optional<std::string> LayerView::Find(std::string_view path, bool follow) const {
  auto parts = ResolveLinks(path, follow, false, [this](const auto& p) { return Lookup(p); });
  if (!parts) return std::nullopt;
  return Lookup(*parts);
}

std::set<std::string> LayerView::List(std::string_view path) const {
  std::set<std::string> names, hidden;
  auto parts = ResolveLinks(path, true, false, [this](const auto& p) { return Lookup(p); });
  if (!parts) return names;
  for (const auto& layer : layers_) {
    const Walk w = WalkLayer(layer, *parts);
    if (w.hidden) break;
    if (w.found) {
      const std::string dir = Under(layer, *parts, parts->size());
      struct stat st;
      if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) break;
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (names.contains(name) || hidden.contains(name)) continue;
        (IsWhiteout(e.path().string()) ? hidden : names).insert(name);
      }
      if (!parts->empty() && IsOpaque(dir)) break;
    }
    if (w.opaque) break;
  }
  return names;
}

}  // namespace mkube::agent::image
