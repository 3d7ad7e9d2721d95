#include "agent/runtime/image.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "absl/strings/str_split.h"
#include "base/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace mkube::agent::runtime {
namespace fs = std::filesystem;

namespace {

constexpr char kConfigFile[] = "image.json";
// Beside each pulled image's folder (<name>/<tag>.pulled): written once the copy is complete.
constexpr char kPulledMark[] = ".pulled";

int64_t TreeSize(const fs::path& root) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

absl::StatusOr<std::vector<std::string>> Strings(const nlohmann::json& j, const char* field) {
  std::vector<std::string> out;
  if (!j.contains(field)) return out;
  const auto& v = j.at(field);
  if (!v.is_array()) return absl::InvalidArgumentError(fmt::format("{}: must be a list of strings", field));
  for (const auto& s : v) {
    if (!s.is_string()) return absl::InvalidArgumentError(fmt::format("{}: must be a list of strings", field));
    out.push_back(s.get<std::string>());
  }
  return out;
}

// A registry image's version: every file's path, size and modification time, hashed.
std::string Digest(const fs::path& dir) {
  std::vector<std::string> entries;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const auto mtime = it->last_write_time(ec).time_since_epoch().count();
    entries.push_back(fmt::format("{}:{}:{}", fs::relative(it->path(), dir, ec).string(),
                                  it->file_size(ec), mtime));
  }
  std::sort(entries.begin(), entries.end());
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const auto& e : entries) {
    for (unsigned char ch : e) h = (h ^ ch) * 1099511628211ull;
    h = (h ^ '\n') * 1099511628211ull;
  }
  return fmt::format("fnv1a:{:016x}", h);
}

std::string ReadMark(const fs::path& mark) {
  std::ifstream in(mark);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

absl::StatusOr<ImageRef> ParseImageRef(const std::string& image) {
  std::string s = image;
  if (s.empty()) return absl::InvalidArgumentError("empty image name");
  if (const auto at = s.find('@'); at != std::string::npos) {
    return absl::InvalidArgumentError(fmt::format("image \"{}\": digests are not supported", image));
  }
  ImageRef ref;
  const auto slash = s.rfind('/');
  const auto colon = s.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    ref.tag = s.substr(colon + 1);
    s = s.substr(0, colon);
  } else {
    ref.tag = "latest";
  }
  for (const char* prefix : {"docker.io/", "library/"}) {
    if (s.rfind(prefix, 0) == 0) s = s.substr(std::string_view(prefix).size());
  }
  if (s.empty() || ref.tag.empty()) {
    return absl::InvalidArgumentError(fmt::format("invalid image name \"{}\"", image));
  }
  // Only a registry path: no climbing out of the registry folder.
  for (absl::string_view part : absl::StrSplit(s, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return absl::InvalidArgumentError(fmt::format("invalid image name \"{}\"", image));
    }
  }
  if (fs::path(s).is_absolute() || ref.tag.find('/') != std::string::npos || ref.tag == "..") {
    return absl::InvalidArgumentError(fmt::format("invalid image name \"{}\"", image));
  }
  ref.name = s;
  return ref;
}

absl::StatusOr<Image> ImageStore::Load(const ImageRef& ref) const {
  Image img;
  img.ref = ref;
  img.root = (fs::path(store_) / ref.name / ref.tag).string();
  img.layers = {img.root};
  const fs::path config = fs::path(img.root) / kConfigFile;
  std::error_code ec;
  if (fs::exists(config, ec)) {
    std::ifstream in(config);
    auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError(fmt::format("image {}: {} is not a JSON object", ref.String(), kConfigFile));
    }
    auto entry = Strings(j, "entrypoint");
    auto cmd = Strings(j, "cmd");
    auto env = Strings(j, "env");
    for (const auto* r : {&entry, &cmd, &env}) {
      if (!r->ok()) return absl::InvalidArgumentError(fmt::format("image {}: {}", ref.String(), std::string(r->status().message())));
    }
    img.config = {std::move(*entry), std::move(*cmd), std::move(*env)};
    if (j.contains("user")) {
      if (!j["user"].is_string()) {
        return absl::InvalidArgumentError(
            fmt::format("image {}: user: must be a string (UID[:GID])", ref.String()));
      }
      img.config.user = j["user"].get<std::string>();
    }
  }
  img.size_bytes = TreeSize(img.root);
  return img;
}

ImageStore::ImageStore(std::string registry_dir, std::string store_dir, OciOptions oci)
    : registry_(std::move(registry_dir)), store_(std::move(store_dir)) {
  if (oci.dir.empty()) return;
  oci_dir_ = oci.dir;
  layered_ = oci.layered;
  oci_store_ = std::make_unique<image::ContentStore>(oci.dir);
  oci_registry_ = std::make_unique<image::RegistryClient>(std::move(oci.registry));
  puller_ = std::make_unique<image::Puller>(oci_store_.get(), oci_registry_.get());
}

bool ImageStore::FromFolder(const std::string& image) const {
  auto ref = ParseImageRef(image);
  if (!ref.ok()) return false;
  std::error_code ec;
  if (fs::exists(fs::path(store_) / ref->name / (ref->tag + kPulledMark), ec)) return true;
  return !registry_.empty() && fs::is_directory(fs::path(registry_) / ref->name / ref->tag, ec);
}

bool ImageStore::Present(const std::string& image) const {
  if (auto ref = ParseImageRef(image); ref.ok()) {
    std::error_code ec;
    if (fs::exists(fs::path(store_) / ref->name / (ref->tag + kPulledMark), ec)) return true;
  }
  auto ref = image::ParseReference(image);
  return puller_ && ref.ok() && puller_->Local(*ref).ok();
}

absl::StatusOr<Image> ImageStore::OciImage(const image::PulledImage& pulled) {
  std::vector<std::string> layers;
  std::string root;
  if (layered_) {
    for (auto it = pulled.layers.rbegin(); it != pulled.layers.rend(); ++it) {
      MKUBE_ASSIGN_OR_RETURN(layers.emplace_back(),
                             oci_store_->Layer(*it, image::Whiteouts::kOverlay));
    }
    // overlayfs stacks one folder at least: an image of no layers is an empty one.
    if (layers.empty()) {
      MKUBE_ASSIGN_OR_RETURN(root, oci_store_->Root(pulled.manifest_digest, {}));
      layers = {root};
    }
  } else {
    MKUBE_ASSIGN_OR_RETURN(root, oci_store_->Root(pulled.manifest_digest, pulled.layers));
    layers = {root};
  }
  const image::ImageConfig& c = pulled.config;
  Image img{.layers = std::move(layers),
            .root = std::move(root),
            .config = {c.entrypoint, c.cmd, c.env, c.user, c.working_dir},
            .size_bytes = pulled.size_bytes,
            .own_root = true};
  // Named as people write it: "nginx:latest", "127.0.0.1:5000/app:v1".
  const std::string familiar = pulled.ref.Familiar();
  const size_t cut = familiar.find('@') != std::string::npos ? familiar.find('@')
                                                              : familiar.rfind(':');
  img.ref = {familiar.substr(0, cut), pulled.ref.tag.empty() ? pulled.ref.digest : pulled.ref.tag};
  image::Reference by_digest = pulled.ref;
  by_digest.tag.clear();
  by_digest.digest = pulled.digest;
  img.id = by_digest.String();
  return img;
}

absl::StatusOr<Image> ImageStore::PullOci(const std::string& image, bool always) {
  auto ref = image::ParseReference(image);
  if (!ref.ok()) return ref.status();
  if (!puller_) {
    return absl::NotFoundError(fmt::format("image \"{}\" not found in the registry", image));
  }
  absl::ReaderMutexLock writing(&store_mu_);
  if (served_.count(ref->String())) {
    if (!always) {
      if (auto local = puller_->Local(*ref); local.ok()) return OciImage(*local);
    }
    // Pulled from the node's archive: its blobs, then its name, as a registry pull lands.
    MKUBE_ASSIGN_OR_RETURN(image::PulledImage src, served_puller_->Local(*ref));
    std::set<std::string> blobs = {src.digest, src.manifest_digest, src.config_digest};
    blobs.insert(src.layers.begin(), src.layers.end());
    for (const auto& digest : blobs) {
      MKUBE_RETURN_IF_ERROR(oci_store_->CopyBlobFrom(*served_store_, digest));
    }
    MKUBE_RETURN_IF_ERROR(oci_store_->SetRef(*ref, src.digest));
    {
      absl::MutexLock lock(&pull_mu_);
      listed_.reset();
    }
    MKUBE_ASSIGN_OR_RETURN(image::PulledImage local, puller_->Local(*ref));
    return OciImage(local);
  }
  if (!always) {
    if (auto local = puller_->Local(*ref); local.ok()) return OciImage(*local);
  }
  MKUBE_ASSIGN_OR_RETURN(image::PulledImage pulled, puller_->Pull(*ref));
  {
    absl::MutexLock lock(&pull_mu_);
    listed_.reset();
  }
  return OciImage(pulled);
}

absl::StatusOr<Image> ImageStore::Pull(const std::string& image, bool always) {
  if (auto ref = image::ParseReference(image); ref.ok() && served_.count(ref->String())) {
    return PullOci(image, always);
  }
  if (!FromFolder(image)) return PullOci(image, always);
  MKUBE_ASSIGN_OR_RETURN(auto ref, ParseImageRef(image));
  absl::MutexLock lock(&pull_mu_);
  const fs::path dest = fs::path(store_) / ref.name / ref.tag;
  const fs::path mark = fs::path(store_) / ref.name / (ref.tag + kPulledMark);
  std::error_code ec;
  if (always || !fs::exists(mark, ec)) {
    const fs::path src = fs::path(registry_) / ref.name / ref.tag;
    if (registry_.empty() || !fs::is_directory(src, ec)) {
      return absl::NotFoundError(
          fmt::format("image \"{}\" not found in the registry", ref.String()));
    }
    // As a registry answers a pull with the image's digest: unchanged, nothing is copied.
    const std::string digest = Digest(src);
    if (ReadMark(mark) == digest) return Load(ref);
    // Copied beside its place and renamed into it, so a half-copied image is never used.
    const fs::path tmp = dest.string() + ".pulling";
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp.parent_path(), ec);
    fs::copy(src, tmp, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec) {
      fs::remove_all(tmp, ec);
      return absl::InternalError(fmt::format("pulling \"{}\": {}", ref.String(), ec.message()));
    }
    listed_.reset();
    fs::remove(mark, ec);
    fs::remove_all(dest, ec);
    fs::rename(tmp, dest, ec);
    if (ec)
      return absl::InternalError(fmt::format("pulling \"{}\": {}", ref.String(), ec.message()));
    std::ofstream(mark) << digest << "\n";
  }
  return Load(ref);
}

std::vector<Image> ImageStore::List() const {
  absl::MutexLock lock(&pull_mu_);
  if (listed_) return *listed_;
  std::vector<Image> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(store_, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() != kPulledMark || !it->is_regular_file(ec)) continue;
    const fs::path rel = fs::relative(p, store_, ec);
    ImageRef ref{rel.parent_path().string(), rel.stem().string()};
    if (auto img = Load(ref); img.ok()) out.push_back(std::move(*img));
  }
  if (puller_) {
    // One image per content: every tag that stands for it is one of its names.
    std::map<std::string, size_t> by_digest;
    for (const auto& ref : oci_store_->Tags()) {
      auto local = puller_->Local(ref);
      if (!local.ok()) continue;
      const std::string familiar = ref.Familiar();
      auto [it, added] = by_digest.emplace(local->digest, out.size());
      Image& img = added ? out.emplace_back() : out[it->second];
      if (added) {
        const size_t colon = familiar.rfind(':');
        img.ref = {familiar.substr(0, colon), ref.tag};
        img.size_bytes = local->size_bytes;
        img.own_root = true;
      } else {
        img.aliases.push_back(familiar);
      }
      if (ref.String() != familiar) img.aliases.push_back(ref.String());
      image::Reference in_repository = ref;  // the content's digest in each repository
      in_repository.tag.clear();
      in_repository.digest = local->digest;
      if (std::find(img.aliases.begin(), img.aliases.end(), in_repository.String()) ==
          img.aliases.end()) {
        img.aliases.push_back(in_repository.String());
      }
    }
  }
  listed_ = out;
  return out;
}

absl::StatusOr<std::vector<LoadedImage>> ImageStore::LoadArchive(image::ArchiveSource source,
                                                                 const std::string& what) {
  if (!oci_store_) {
    return absl::FailedPreconditionError("this node keeps no OCI images (it has no content store)");
  }
  absl::ReaderMutexLock writing(&store_mu_);
  auto imported = image::ImportArchive(std::move(source), what, oci_store_.get());
  {
    absl::MutexLock lock(&pull_mu_);
    listed_.reset();  // blobs may have landed even when the import failed
  }
  if (!imported.ok()) return imported.status();
  std::vector<LoadedImage> out;
  for (auto& one : *imported) {
    LoadedImage loaded{.digest = one.digest};
    for (const auto& name : one.names) {
      auto ref = image::ParseReference(name);
      if (!ref.ok()) continue;
      loaded.names.push_back(ref->Familiar());
      if (auto local = puller_->Local(*ref); local.ok()) loaded.size_bytes = local->size_bytes;
    }
    out.push_back(std::move(loaded));
  }
  return out;
}

absl::Status ImageStore::ServeArchive(const std::string& file) {
  if (!oci_store_) return absl::FailedPreconditionError("this node keeps no OCI images");
  if (!served_store_) {
    served_store_ = std::make_unique<image::ContentStore>(oci_dir_ + "/served");
    served_puller_ = std::make_unique<image::Puller>(served_store_.get(), nullptr);
  }
  MKUBE_ASSIGN_OR_RETURN(auto imported, image::ImportArchive(file, served_store_.get()));
  for (const auto& img : imported) {
    for (const auto& name : img.names) {
      if (auto ref = image::ParseReference(name); ref.ok()) served_.insert(ref->String());
    }
  }
  return absl::OkStatus();
}

std::vector<StoredImage> ImageStore::StoredImages() const {
  std::vector<StoredImage> out;
  if (!puller_) return out;
  std::map<std::string, size_t> by_digest;
  for (const auto& [ref, digest] : oci_store_->Refs()) {
    auto [it, added] = by_digest.emplace(digest, out.size());
    if (added) {
      StoredImage img{.digest = digest};
      if (auto local = puller_->Local(ref); local.ok()) img.size_bytes = local->size_bytes;
      out.push_back(std::move(img));
    }
    out[it->second].names.push_back(ref.Familiar());
  }
  return out;
}

std::set<std::string> ImageStore::DigestsOf(const std::vector<std::string>& names) const {
  std::set<std::string> out;
  if (!oci_store_) return out;
  for (const auto& name : names) {
    auto ref = image::ParseReference(name);
    if (!ref.ok()) continue;
    if (!ref->digest.empty()) out.insert(ref->digest);
    if (auto digest = oci_store_->Ref(*ref)) out.insert(*digest);
  }
  return out;
}

absl::StatusOr<int64_t> ImageStore::Remove(
    const std::string& digest, const std::function<std::vector<std::string>()>& in_use) {
  if (!oci_store_) return 0;
  if (!store_mu_.TryLock()) return absl::UnavailableError("pulls or loads are under way");
  int64_t freed = 0;
  // Asked with pulls held off: a pod that found its image since the caller looked is seen.
  const std::set<std::string> used = DigestsOf(in_use ? in_use() : std::vector<std::string>{});
  const bool wanted = used.count(digest) > 0;
  if (!wanted) {
    for (const auto& [ref, named] : oci_store_->Refs()) {
      if (named == digest) oci_store_->RemoveRef(ref).IgnoreError();
    }
    freed = oci_store_->Sweep(used);
  }
  store_mu_.Unlock();
  if (wanted) return absl::FailedPreconditionError("a container uses it now");
  absl::MutexLock lock(&pull_mu_);
  listed_.reset();
  return freed;
}

}  // namespace mkube::agent::runtime
