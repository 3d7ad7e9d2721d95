#include "agent/image/puller.h"

#include <chrono>

#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::image {

struct Puller::Progress {
  using Clock = std::chrono::steady_clock;
  static constexpr auto kEvery = std::chrono::seconds(5);

  std::string image;
  int64_t total = 0, done = 0;
  Clock::time_point began = Clock::now(), said = Clock::now();

  void Add(size_t n) {
    done += static_cast<int64_t>(n);
    const auto now = Clock::now();
    if (now - said < kEvery) return;
    said = now;
    const double seconds = std::chrono::duration<double>(now - began).count();
    log::Logger("images").info("pulling {}: {:.1f} of {:.1f} MB ({:.1f} MB/s)", image,
                               static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6,
                               static_cast<double>(done) / 1e6 / seconds);
  }
};

absl::StatusOr<PulledImage> Puller::Pull(const Reference& ref) {
  const std::string key = ref.String();
  std::promise<absl::StatusOr<PulledImage>> mine;
  std::shared_future<absl::StatusOr<PulledImage>> result;
  bool first = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = pulling_.find(key);
    if (it == pulling_.end()) {
      result = mine.get_future().share();
      pulling_.emplace(key, result);
      first = true;
    } else {
      result = it->second;
    }
  }
  if (!first) return result.get();
  mine.set_value(PullOnce(ref));
  {
    std::lock_guard<std::mutex> l(mu_);
    pulling_.erase(key);
  }
  return result.get();
}

// Blob `d` into the store, unless it is there: its digest, or the error.
absl::StatusOr<std::string> Puller::Fetch(const Reference& ref, const Descriptor& d,
                                          Progress* progress) {
  absl::Status last;
  for (int attempt = 0; attempt < 2 && !store_->HasBlob(d.digest); ++attempt) {
    MKUBE_ASSIGN_OR_RETURN(auto writer, store_->NewBlob(d.digest, d.size > 0 ? d.size : -1));
    last = registry_->GetBlob(ref, d.digest, [&](std::string_view b) {
      progress->Add(b.size());
      return writer->Write(b);
    });
    if (last.ok()) last = writer->Commit();
    if (last.ok()) return d.digest;
    if (last.code() != absl::StatusCode::kDataLoss) break;  // only a corrupt copy is worth another
  }
  if (store_->HasBlob(d.digest)) return d.digest;
  return last;
}

absl::StatusOr<PulledImage> Puller::PullOnce(const Reference& ref) {
  MKUBE_ASSIGN_OR_RETURN(auto top, registry_->GetManifest(ref, ref.Selector()));
  MKUBE_RETURN_IF_ERROR(store_->PutBlob(top.digest, top.body));
  MKUBE_ASSIGN_OR_RETURN(Document doc, ParseDocument(top.body, top.content_type));
  Manifest manifest = doc.manifest;
  if (doc.is_index) {
    MKUBE_ASSIGN_OR_RETURN(Descriptor platform, ForPlatform(doc.index, os_, architecture_));
    MKUBE_ASSIGN_OR_RETURN(auto m, registry_->GetManifest(ref, platform.digest));
    MKUBE_RETURN_IF_ERROR(store_->PutBlob(m.digest, m.body));
    MKUBE_ASSIGN_OR_RETURN(Document inner, ParseDocument(m.body, m.content_type));
    if (inner.is_index) {
      return absl::InvalidArgumentError(
          fmt::format("{}: an index names another index", ref.Familiar()));
    }
    manifest = std::move(inner.manifest);
  }
  Progress progress{.image = ref.Familiar()};
  if (!store_->HasBlob(manifest.config.digest)) progress.total += manifest.config.size;
  for (const auto& layer : manifest.layers) {
    if (!store_->HasBlob(layer.digest)) progress.total += layer.size;
  }
  MKUBE_RETURN_IF_ERROR(Fetch(ref, manifest.config, &progress).status());
  for (const auto& layer : manifest.layers) {
    MKUBE_RETURN_IF_ERROR(Fetch(ref, layer, &progress).status());
  }
  // The name is recorded last: a name on the node stands for an image that is whole there.
  MKUBE_RETURN_IF_ERROR(store_->SetRef(ref, top.digest));
  return Read(ref, top.digest);
}

absl::StatusOr<PulledImage> Puller::Local(const Reference& ref) const {
  auto digest = store_->Ref(ref);
  if (!digest)
    return absl::NotFoundError(fmt::format("image \"{}\" is not on the node", ref.Familiar()));
  return Read(ref, *digest);
}

absl::StatusOr<PulledImage> Puller::Read(const Reference& ref, const std::string& digest) const {
  PulledImage img{.ref = ref, .digest = digest, .manifest_digest = digest};
  MKUBE_ASSIGN_OR_RETURN(std::string body, store_->ReadBlob(digest));
  MKUBE_ASSIGN_OR_RETURN(Document doc, ParseDocument(body));
  if (doc.is_index) {
    MKUBE_ASSIGN_OR_RETURN(Descriptor platform, ForPlatform(doc.index, os_, architecture_));
    img.manifest_digest = platform.digest;
    MKUBE_ASSIGN_OR_RETURN(body, store_->ReadBlob(platform.digest));
    MKUBE_ASSIGN_OR_RETURN(doc, ParseDocument(body));
  }
  img.config_digest = doc.manifest.config.digest;
  MKUBE_ASSIGN_OR_RETURN(std::string config, store_->ReadBlob(doc.manifest.config.digest));
  MKUBE_ASSIGN_OR_RETURN(img.config, ParseImageConfig(config));
  for (const auto& layer : doc.manifest.layers) {
    if (!store_->HasBlob(layer.digest)) {
      return absl::NotFoundError(
          fmt::format("image \"{}\" lacks layer {} on the node", ref.Familiar(), layer.digest));
    }
    img.layers.push_back(layer.digest);
    img.size_bytes += layer.size;
  }
  img.size_bytes += doc.manifest.config.size;
  return img;
}

}  // namespace mkube::agent::image
