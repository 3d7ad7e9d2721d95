#include "agent/image/layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/image/layer_view.h"
#include "fmt/format.h"

namespace mkube::agent::image {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kWhiteout = ".wh.";
constexpr std::string_view kOpaque = ".wh..wh..opq";

using Reader = std::unique_ptr<archive, decltype(&archive_read_free)>;
using Writer = std::unique_ptr<archive, decltype(&archive_write_free)>;

// An entry's path made relative and plain ("./a//b/" → "a/b"); empty when it would leave the
// folder (absolute, or a ".." part).
std::string CleanPath(std::string_view path) {
  if (!path.empty() && path.front() == '/') return "";
  std::string out;
  for (absl::string_view part :
       absl::StrSplit(absl::string_view(path.data(), path.size()), '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") return "";
    if (!out.empty()) out += '/';
    out.append(part.data(), part.size());
  }
  return out;
}

// Where the folder `rel` (a clean relative path) lies on disk under `root`, with the symbolic
// links on the way followed as the image sees them: an absolute target from the image's root,
// ".." no higher than it. So "lib/x" with lib -> usr/lib is "usr/lib/x" (images whose /lib
// links to /usr/lib), and no link leads out of the image.
absl::StatusOr<std::string> ResolveIn(const std::string& root, const std::string& rel) {
  auto parts = ResolveLinks(rel, true, true, [&root](const std::vector<std::string>& p) {
    return std::optional<std::string>(root + "/" + absl::StrJoin(p, "/"));
  });
  if (!parts) {
    return absl::InvalidArgumentError(fmt::format("too many symbolic links under \"{}\"", rel));
  }
  return absl::StrJoin(*parts, "/");
}

// `path`'s folder resolved under `root` (as ResolveIn), and its last name.
absl::StatusOr<std::string> PlaceIn(const std::string& root, const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return path;
  auto dir = ResolveIn(root, path.substr(0, slash));
  if (!dir.ok()) return dir.status();
  return dir->empty() ? path.substr(slash + 1) : *dir + "/" + path.substr(slash + 1);
}

// What this layer has written so far, to tell its own entries from the layers' below.
class Written {
 public:
  void Add(const std::string& path) { paths_.insert(path); }
  // Whether `path` or anything under it is this layer's.
  bool Holds(const std::string& path) const {
    auto it = paths_.lower_bound(path);
    return it != paths_.end() && (*it == path || it->rfind(path + "/", 0) == 0);
  }

 private:
  std::set<std::string> paths_;
};

class Unpacker {
 public:
  Unpacker(std::string dest, Whiteouts mode) : dest_(std::move(dest)), mode_(mode) {}

  absl::StatusOr<LayerStats> Run(const std::string& blob) {
    Reader in(archive_read_new(), archive_read_free);
    archive_read_support_filter_all(in.get());
    archive_read_support_format_tar(in.get());
    if (archive_read_open_filename(in.get(), blob.c_str(), 64 << 10) != ARCHIVE_OK) {
      return Fail("cannot read the layer", in.get());
    }
    Writer out(archive_write_disk_new(), archive_write_free);
    int flags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_XATTR |
                ARCHIVE_EXTRACT_UNLINK | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                ARCHIVE_EXTRACT_SECURE_NODOTDOT;
    if (root_) flags |= ARCHIVE_EXTRACT_OWNER;
    archive_write_disk_set_options(out.get(), flags);
    archive_write_disk_set_standard_lookup(out.get());
    archive_entry* entry = nullptr;
    int r;
    while ((r = archive_read_next_header(in.get(), &entry)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
      if (auto st = Entry(in.get(), out.get(), entry); !st.ok()) return st;
    }
    if (r != ARCHIVE_EOF) return Fail("the layer is not a whole tar archive", in.get());
    if (archive_write_close(out.get()) != ARCHIVE_OK) return Fail("finishing the layer", out.get());
    return stats_;
  }

 private:
  absl::Status Entry(archive* in, archive* out, archive_entry* entry) {
    const std::string name = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    const std::string path = CleanPath(name);
    if (path.empty()) {
      if (CleanPath(name + "/x") == "x") return absl::OkStatus();  // the root folder itself
      return absl::InvalidArgumentError(
          fmt::format("the layer's entry \"{}\" would land outside the image", name));
    }
    ++stats_.entries;
    auto placed = PlaceIn(dest_, path);
    if (!placed.ok()) return placed.status();
    const size_t slash = placed->rfind('/');
    const std::string dir = slash == std::string::npos ? "" : placed->substr(0, slash);
    const std::string base = placed->substr(slash + 1);
    if (base.rfind(kWhiteout, 0) == 0) {
      ++stats_.whiteouts;
      return base == kOpaque ? Opaque(dir) : Delete(dir, base.substr(kWhiteout.size()));
    }
    const mode_t type = archive_entry_filetype(entry);
    if ((type == AE_IFCHR || type == AE_IFBLK) && !root_)
      return absl::OkStatus();  // mknod needs root
    written_.Add(*placed);
    archive_entry_set_pathname(entry, (dest_ + "/" + *placed).c_str());
    if (const char* link = archive_entry_hardlink(entry)) {
      const std::string target = CleanPath(link);
      auto target_placed = target.empty() ? placed : PlaceIn(dest_, target);
      if (target.empty() || !target_placed.ok()) {
        return absl::InvalidArgumentError(
            fmt::format("the layer's hard link \"{}\" points outside the image", name));
      }
      archive_entry_set_hardlink(entry, (dest_ + "/" + *target_placed).c_str());
    }
    if (type == AE_IFREG) stats_.bytes += archive_entry_size(entry);
    if (archive_write_header(out, entry) < ARCHIVE_WARN)
      return Fail("unpacking \"" + name + "\"", out);
    const void* block;
    size_t size;
    la_int64_t offset;
    int r;
    while ((r = archive_read_data_block(in, &block, &size, &offset)) == ARCHIVE_OK) {
      if (archive_write_data_block(out, block, size, offset) < ARCHIVE_WARN) {
        return Fail("unpacking \"" + name + "\"", out);
      }
    }
    if (r != ARCHIVE_EOF) return Fail("reading \"" + name + "\"", in);
    if (archive_write_finish_entry(out) < ARCHIVE_WARN)
      return Fail("unpacking \"" + name + "\"", out);
    return absl::OkStatus();
  }

  // ".wh.NAME" in `dir`.
  absl::Status Delete(const std::string& dir, const std::string& name) {
    const std::string rel = dir.empty() ? name : dir + "/" + name;
    if (CleanPath(rel) != rel || name.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("the layer's whiteout of \"{}\" is not a name", rel));
    }
    std::error_code ec;
    const fs::path target = fs::path(dest_) / rel;
    if (mode_ == Whiteouts::kApply) {
      fs::remove_all(target, ec);
      return absl::OkStatus();
    }
    fs::create_directories(target.parent_path(), ec);
    fs::remove_all(target, ec);
    if (mknod(target.c_str(), S_IFCHR | 0000, makedev(0, 0)) != 0) {
      return absl::InternalError(
          fmt::format("cannot make the whiteout of \"{}\": {}", rel, strerror(errno)));
    }
    return absl::OkStatus();
  }

  // ".wh..wh..opq" in `dir`.
  absl::Status Opaque(const std::string& dir) {
    std::error_code ec;
    const fs::path folder = fs::path(dest_) / dir;
    fs::create_directories(folder, ec);
    if (mode_ == Whiteouts::kOverlay) {
      if (setxattr(folder.c_str(), "trusted.overlay.opaque", "y", 1, 0) != 0) {
        return absl::InternalError(
            fmt::format("cannot mark \"{}\" opaque: {}", dir.empty() ? "/" : dir, strerror(errno)));
      }
      return absl::OkStatus();
    }
    for (const auto& child : fs::directory_iterator(folder, ec)) {
      const std::string rel = (dir.empty() ? "" : dir + "/") + child.path().filename().string();
      if (!written_.Holds(rel)) fs::remove_all(child.path(), ec);
    }
    return absl::OkStatus();
  }

  absl::Status Fail(const std::string& what, archive* a) {
    const char* why = archive_error_string(a);
    return absl::InvalidArgumentError(fmt::format("{}: {}", what, why ? why : "unknown error"));
  }

  const std::string dest_;
  const Whiteouts mode_;
  const bool root_ = geteuid() == 0;
  Written written_;
  LayerStats stats_;
};

}  // namespace

absl::StatusOr<LayerStats> UnpackLayer(const std::string& blob, const std::string& dest,
                                       Whiteouts whiteouts) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  // Symbolic links on the way to the folder are the node's, not the layer's.
  const fs::path real = fs::canonical(dest, ec);
  if (ec)
    return absl::InternalError(fmt::format("cannot make the folder {}: {}", dest, ec.message()));
  return Unpacker(real.string(), whiteouts).Run(blob);
}

}  // namespace mkube::agent::image
