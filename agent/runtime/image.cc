#include "agent/runtime/image.h"

#include <algorithm>
#include <map>

#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::runtime {
namespace {

// A reference as people write it, split at its tag (or digest).
ImageRef RefOf(const image::Reference& ref) {
  const std::string familiar = ref.Familiar();
  const size_t cut = ref.digest.empty() ? familiar.rfind(':') : familiar.find('@');
  return {familiar.substr(0, cut), ref.tag.empty() ? ref.digest : ref.tag};
}

}  // namespace

ImageStore::ImageStore(OciOptions oci) {
  oci_dir_ = oci.dir;
  layered_ = oci.layered;
  oci_store_ = std::make_unique<image::ContentStore>(oci.dir);
  oci_registry_ = std::make_unique<image::RegistryClient>(std::move(oci.registry));
  puller_ = std::make_unique<image::Puller>(oci_store_.get(), oci_registry_.get());
}

bool ImageStore::Present(const std::string& image) const {
  auto ref = image::ParseReference(image);
  return ref.ok() && puller_->Local(*ref).ok();
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
            .size_bytes = pulled.size_bytes};
  // Named as people write it: "nginx:latest", "127.0.0.1:5000/app:v1".
  img.ref = RefOf(pulled.ref);
  image::Reference by_digest = pulled.ref;
  by_digest.tag.clear();
  by_digest.digest = pulled.digest;
  img.id = by_digest.String();
  return img;
}

absl::StatusOr<Image> ImageStore::Pull(const std::string& image, bool always) {
  auto ref = image::ParseReference(image);
  if (!ref.ok()) return ref.status();
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
      absl::MutexLock lock(&list_mu_);
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
    absl::MutexLock lock(&list_mu_);
    listed_.reset();
  }
  return OciImage(pulled);
}

std::vector<Image> ImageStore::List() const {
  absl::MutexLock lock(&list_mu_);
  if (listed_) return *listed_;
  // One image per content, under all its names (as the kubelet lists them, so that a pod naming
  // it any of these ways finds it): each name as people write it and in full, and the
  // content's digest in each repository.
  std::vector<Image> out;
  std::vector<std::vector<std::string>> names;
  std::map<std::string, size_t> by_digest;
  for (const auto& [ref, digest] : oci_store_->Refs()) {
    auto [it, added] = by_digest.emplace(digest, out.size());
    if (added) {
      Image& img = out.emplace_back();
      img.ref = RefOf(ref);
      if (auto local = puller_->Local(ref); local.ok()) img.size_bytes = local->size_bytes;
      names.emplace_back();
    }
    Image& img = out[it->second];
    // Named by a tag rather than a digest where it has one.
    if (!ref.tag.empty() && img.ref.tag.rfind("sha256:", 0) == 0) img.ref = RefOf(ref);
    image::Reference in_repository = ref;
    in_repository.tag.clear();
    in_repository.digest = digest;
    for (const std::string& name : {ref.Familiar(), ref.String(), in_repository.String()}) {
      auto& seen = names[it->second];
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    for (auto& name : names[i]) {
      if (name != out[i].ref.String()) out[i].aliases.push_back(std::move(name));
    }
  }
  listed_ = out;
  return out;
}

absl::StatusOr<std::vector<LoadedImage>> ImageStore::LoadArchive(image::ArchiveSource source,
                                                                 const std::string& what) {
  absl::ReaderMutexLock writing(&store_mu_);
  auto imported = image::ImportArchive(std::move(source), what, oci_store_.get());
  {
    absl::MutexLock lock(&list_mu_);
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

absl::StatusOr<image::PulledImage> ImageStore::Inspect(const std::string& image) const {
  MKUBE_ASSIGN_OR_RETURN(image::Reference ref, image::ParseReference(image));
  auto local = puller_->Local(ref);
  if (!local.ok() && absl::IsNotFound(local.status())) {
    return absl::NotFoundError(fmt::format("no image \"{}\" on this node", image));
  }
  return local;
}

std::vector<StoredImage> ImageStore::StoredImages() const {
  std::vector<StoredImage> out;
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
  absl::MutexLock lock(&list_mu_);
  listed_.reset();
  return freed;
}

}  // namespace mkube::agent::runtime
