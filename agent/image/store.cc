#include "agent/image/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "agent/image/manifest.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::image {
namespace {

namespace fs = std::filesystem;

// A name beside `path` no other writer uses.
std::string TempBeside(const std::string& path, std::string_view what) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}.{}-{}-{}", path, what, getpid(), counter.fetch_add(1));
}

absl::Status BadDigest(const std::string& digest) {
  return absl::InvalidArgumentError(fmt::format("\"{}\" is not a sha256 digest", digest));
}

// Writes `bytes` to `path` whole, through a temporary file synced and renamed.
absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = TempBeside(path, "writing");
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(fmt::format("cannot write {}: {}", tmp, strerror(errno)));
  const bool ok =
      write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return absl::InternalError(fmt::format("cannot write {}: {}", path, strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

ContentStore::BlobWriter::~BlobWriter() {
  if (fd_ >= 0) close(fd_);
  if (!done_) unlink(tmp_.c_str());
}

absl::Status ContentStore::BlobWriter::Write(std::string_view bytes) {
  for (size_t off = 0; off < bytes.size();) {
    const ssize_t n = write(fd_, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(fmt::format("writing {}: {}", digest_, strerror(errno)));
    off += static_cast<size_t>(n);
  }
  hash_.Update(bytes);
  written_ += static_cast<int64_t>(bytes.size());
  if (size_ >= 0 && written_ > size_) {
    return absl::DataLossError(
        fmt::format("blob {} is larger than the {} bytes its manifest says", digest_, size_));
  }
  return absl::OkStatus();
}

absl::Status ContentStore::BlobWriter::Commit() {
  const std::string got = hash_.Finish();
  if (size_ >= 0 && written_ != size_) {
    return absl::DataLossError(
        fmt::format("blob {} has {} bytes, its manifest says {}", digest_, written_, size_));
  }
  if (digest_.empty()) digest_ = got;
  if (got != digest_) {
    return absl::DataLossError(
        fmt::format("blob {} is corrupt: its content hashes to {}", digest_, got));
  }
  const bool synced = fsync(fd_) == 0;
  close(fd_);
  fd_ = -1;
  if (!synced || rename(tmp_.c_str(), store_->BlobPath(digest_).c_str()) != 0) {
    return absl::InternalError(fmt::format("cannot store blob {}: {}", digest_, strerror(errno)));
  }
  done_ = true;
  return absl::OkStatus();
}

std::string ContentStore::BlobPath(const std::string& digest) const {
  return root_ + "/blobs/sha256/" + DigestHex(digest);
}

bool ContentStore::HasBlob(const std::string& digest) const {
  std::error_code ec;
  return !DigestHex(digest).empty() && fs::is_regular_file(BlobPath(digest), ec);
}

absl::StatusOr<std::unique_ptr<ContentStore::BlobWriter>> ContentStore::NewBlob(
    const std::string& digest, int64_t size) {
  if (!digest.empty() && DigestHex(digest).empty()) return BadDigest(digest);
  const std::string folder = root_ + "/blobs/sha256";
  std::error_code ec;
  fs::create_directories(folder, ec);
  const std::string tmp =
      TempBeside(folder + "/" + (digest.empty() ? "new" : DigestHex(digest)), "partial");
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(fmt::format("cannot write {}: {}", tmp, strerror(errno)));
  return std::unique_ptr<BlobWriter>(new BlobWriter(this, digest, size, tmp, fd));
}

absl::Status ContentStore::PutBlob(const std::string& digest, std::string_view bytes) {
  auto w = NewBlob(digest, static_cast<int64_t>(bytes.size()));
  if (!w.ok()) return w.status();
  if (auto st = (*w)->Write(bytes); !st.ok()) return st;
  return (*w)->Commit();
}

absl::Status ContentStore::CopyBlobFrom(const ContentStore& other, const std::string& digest) {
  if (DigestHex(digest).empty()) return BadDigest(digest);
  if (HasBlob(digest)) return absl::OkStatus();
  std::error_code ec;
  fs::create_directories(root_ + "/blobs/sha256", ec);
  if (link(other.BlobPath(digest).c_str(), BlobPath(digest).c_str()) == 0 || errno == EEXIST) {
    return absl::OkStatus();
  }
  // Another filesystem: copied, and checked against its digest on the way.
  std::ifstream in(other.BlobPath(digest), std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("blob {} is not in {}", digest, other.root_));
  MKUBE_ASSIGN_OR_RETURN(auto writer, NewBlob(digest));
  char buf[64 << 10];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    MKUBE_RETURN_IF_ERROR(writer->Write(std::string_view(buf, static_cast<size_t>(in.gcount()))));
  }
  return writer->Commit();
}

absl::StatusOr<std::string> ContentStore::ReadBlob(const std::string& digest, size_t max) const {
  if (DigestHex(digest).empty()) return BadDigest(digest);
  std::ifstream in(BlobPath(digest), std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("blob {} is not in the store", digest));
  std::string bytes;
  char buf[64 << 10];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    bytes.append(buf, static_cast<size_t>(in.gcount()));
    if (bytes.size() > max) {
      return absl::InvalidArgumentError(fmt::format("blob {} is over {} bytes", digest, max));
    }
  }
  if (Sha256Of(bytes) != digest) {
    return absl::DataLossError(fmt::format("blob {} in the store is corrupt", digest));
  }
  return bytes;
}

absl::StatusOr<std::string> ContentStore::Layer(const std::string& digest, Whiteouts whiteouts) {
  if (DigestHex(digest).empty()) return BadDigest(digest);
  const std::string dir = root_ + "/layers/sha256/" + DigestHex(digest);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return dir;
  if (!HasBlob(digest))
    return absl::NotFoundError(fmt::format("layer {} is not in the store", digest));
  // Unpacked beside its place and renamed into it: a folder under the layer's name is whole.
  const std::string tmp = TempBeside(dir, "unpacking");
  auto unpacked = UnpackLayer(BlobPath(digest), tmp, whiteouts);
  if (!unpacked.ok()) {
    fs::remove_all(tmp, ec);
    return absl::Status(
        unpacked.status().code(),
        fmt::format("layer {}: {}", digest, std::string(unpacked.status().message())));
  }
  if (rename(tmp.c_str(), dir.c_str()) != 0) {
    fs::remove_all(tmp, ec);  // another pull unpacked it meanwhile
    if (!fs::is_directory(dir, ec)) {
      return absl::InternalError(fmt::format("cannot store layer {}: {}", digest, strerror(errno)));
    }
  }
  return dir;
}

absl::StatusOr<std::string> ContentStore::Root(const std::string& manifest_digest,
                                               const std::vector<std::string>& layers) {
  if (DigestHex(manifest_digest).empty()) return BadDigest(manifest_digest);
  const std::string dir = root_ + "/roots/" + DigestHex(manifest_digest);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return dir;
  // Made beside its place and renamed into it: a folder under the image's name is whole.
  const std::string tmp = TempBeside(dir, "applying");
  for (const auto& layer : layers) {
    absl::Status st = HasBlob(layer)
                          ? absl::OkStatus()
                          : absl::NotFoundError(fmt::format("layer {} is not in the store", layer));
    if (st.ok()) {
      auto applied = UnpackLayer(BlobPath(layer), tmp, Whiteouts::kApply);
      if (!applied.ok()) {
        st = absl::Status(
            applied.status().code(),
            fmt::format("layer {}: {}", layer, std::string(applied.status().message())));
      }
    }
    if (!st.ok()) {
      fs::remove_all(tmp, ec);
      return st;
    }
  }
  fs::create_directories(tmp, ec);  // an image of no layers is an empty tree
  if (rename(tmp.c_str(), dir.c_str()) != 0) {
    fs::remove_all(tmp, ec);  // another start made it meanwhile
    if (!fs::is_directory(dir, ec)) {
      return absl::InternalError(
          fmt::format("cannot store the image {}: {}", manifest_digest, strerror(errno)));
    }
  }
  return dir;
}

std::string ContentStore::RefPath(const Reference& ref) const {
  const std::string base = root_ + "/refs/" + ref.registry + "/" + ref.repository;
  return ref.digest.empty() ? base + "/tags/" + ref.tag
                            : base + "/digests/" + DigestHex(ref.digest);
}

absl::Status ContentStore::SetRef(const Reference& ref, const std::string& manifest_digest) {
  if (DigestHex(manifest_digest).empty()) return BadDigest(manifest_digest);
  return WriteFileAtomically(RefPath(ref), manifest_digest + "\n");
}

std::optional<std::string> ContentStore::Ref(const Reference& ref) const {
  std::ifstream in(RefPath(ref));
  std::string digest;
  if (!(in >> digest) || DigestHex(digest).empty()) return std::nullopt;
  return digest;
}

bool ContentStore::ListRefs(std::vector<std::pair<Reference, std::string>>* out) const {
  const fs::path refs = root_ + "/refs";
  std::error_code walk;
  if (!fs::exists(refs, walk)) return !walk;
  for (auto it = fs::recursive_directory_iterator(refs, walk); !walk && it != fs::end(it);
       it.increment(walk)) {
    std::error_code ec;
    if (!it->is_regular_file(ec)) {
      if (ec) return false;
      continue;
    }
    // refs/REGISTRY/REPOSITORY.../tags/TAG or .../digests/HEX; a crash may leave a name's
    // half-written file beside it (NAME.writing-PID-N), which names nothing.
    const fs::path rel = fs::relative(it->path(), refs, ec);
    if (ec) return false;
    std::vector<std::string> parts;
    for (const auto& p : rel) parts.push_back(p.string());
    if (parts.size() < 4 || parts.back().find(".writing-") != std::string::npos) continue;
    const std::string& kind = parts[parts.size() - 2];
    Reference ref{.registry = parts[0]};
    if (kind == "tags") {
      ref.tag = parts.back();
    } else if (kind == "digests") {
      ref.digest = "sha256:" + parts.back();
    } else {
      continue;
    }
    for (size_t i = 1; i + 2 < parts.size(); ++i) {
      ref.repository += (ref.repository.empty() ? "" : "/") + parts[i];
    }
    if (auto digest = Ref(ref)) out->emplace_back(std::move(ref), *digest);
  }
  return !walk;
}

std::vector<std::pair<Reference, std::string>> ContentStore::Refs() const {
  std::vector<std::pair<Reference, std::string>> out;
  ListRefs(&out);
  return out;
}

std::vector<Reference> ContentStore::Tags() const {
  std::vector<Reference> out;
  for (auto& [ref, digest] : Refs()) {
    if (!ref.tag.empty()) out.push_back(std::move(ref));
  }
  return out;
}

absl::Status ContentStore::RemoveRef(const Reference& ref) {
  std::error_code ec;
  fs::remove(RefPath(ref), ec);
  if (ec) return absl::InternalError(fmt::format("cannot remove {}: {}", RefPath(ref), ec.message()));
  return absl::OkStatus();
}

namespace {

// The bytes removing the file frees: none while another link to it remains (a blob linked from
// a served archive's store).
int64_t Freed(const fs::path& file) {
  struct stat st {};
  if (lstat(file.c_str(), &st) != 0 || st.st_nlink > 1) return 0;
  return static_cast<int64_t>(st.st_size);
}

// Bytes of the files under `path` (or of the file), which is then removed.
int64_t RemoveCounting(const fs::path& path) {
  int64_t bytes = 0;
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(path, ec))) {
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_regular_file(ec) && !it->is_symlink(ec)) bytes += Freed(it->path());
    }
  } else if (fs::is_regular_file(fs::symlink_status(path, ec))) {
    bytes = Freed(path);
  }
  fs::remove_all(path, ec);
  return bytes;
}

}  // namespace

int64_t ContentStore::Sweep(const std::set<std::string>& keep) {
  // Marked: every digest a name (or `keep`) reaches, through indexes to manifests, and from
  // manifests to their configs and layers. Anything that cannot be read for certain stops the
  // sweep before it removes a thing.
  std::set<std::string> blobs, roots;
  std::vector<std::pair<Reference, std::string>> refs;
  if (!ListRefs(&refs)) return 0;
  std::vector<std::string> pending(keep.begin(), keep.end());
  for (const auto& [ref, digest] : refs) pending.push_back(digest);
  while (!pending.empty()) {
    const std::string digest = pending.back();
    pending.pop_back();
    if (!blobs.insert(DigestHex(digest)).second) continue;
    auto body = ReadBlob(digest);
    if (!body.ok()) {
      if (HasBlob(digest)) return 0;  // there, but unreadable now: keep everything
      continue;                       // a name for content the node lacks
    }
    auto doc = ParseDocument(*body);
    if (!doc.ok()) continue;  // a config or a layer named directly
    if (doc->is_index) {
      for (const auto& d : doc->index.manifests) pending.push_back(d.digest);
      continue;
    }
    roots.insert(DigestHex(digest));
    blobs.insert(DigestHex(doc->manifest.config.digest));
    for (const auto& layer : doc->manifest.layers) blobs.insert(DigestHex(layer.digest));
  }
  int64_t freed = 0;
  auto sweep = [&](const std::string& folder, const std::set<std::string>& keep) {
    std::error_code ec;
    for (auto it = fs::directory_iterator(folder, ec); !ec && it != fs::end(it); it.increment(ec)) {
      if (!keep.count(it->path().filename().string())) freed += RemoveCounting(it->path());
    }
  };
  sweep(root_ + "/blobs/sha256", blobs);
  sweep(root_ + "/layers/sha256", blobs);
  sweep(root_ + "/roots", roots);
  return freed;
}

}  // namespace mkube::agent::image
