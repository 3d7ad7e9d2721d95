#include "agent/image/archive_import.h"

#include <archive.h>
#include <archive_entry.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "agent/image/manifest.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::image {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr size_t kMaxMeta = 4 << 20;

std::string Clean(std::string name) {
  while (absl::StartsWith(name, "./")) name.erase(0, 2);
  return name;
}

// What the archive held: its small documents, and every other file as a blob in the store.
struct Contents {
  std::map<std::string, std::string> meta;     // manifest.json, index.json, oci-layout
  std::map<std::string, std::string> digests;  // path in the archive -> blob digest
  std::map<std::string, std::string> links;    // path -> the path it links to
};

bool IsMeta(const std::string& name) {
  return name == "manifest.json" || name == "index.json" || name == "oci-layout" ||
         name == "repositories";
}

absl::Status StoreEntry(archive* in, const std::string& name, ContentStore* store, Contents* c) {
  const void* block;
  size_t size;
  la_int64_t offset;
  if (IsMeta(name)) {
    std::string& bytes = c->meta[name];
    while (archive_read_data_block(in, &block, &size, &offset) == ARCHIVE_OK) {
      bytes.append(static_cast<const char*>(block), size);
      if (bytes.size() > kMaxMeta) return absl::InvalidArgumentError(name + " is too large");
    }
    return absl::OkStatus();
  }
  // An OCI layout names each blob by its digest, which the bytes must have.
  std::string expected;
  if (absl::StartsWith(name, "blobs/sha256/")) expected = "sha256:" + name.substr(13);
  MKUBE_ASSIGN_OR_RETURN(auto writer, store->NewBlob(expected));
  int r;
  while ((r = archive_read_data_block(in, &block, &size, &offset)) == ARCHIVE_OK) {
    MKUBE_RETURN_IF_ERROR(writer->Write(std::string_view(static_cast<const char*>(block), size)));
  }
  if (r != ARCHIVE_EOF) {
    return absl::InvalidArgumentError(
        fmt::format("reading \"{}\" in the archive: {}", name, archive_error_string(in)));
  }
  if (auto st = writer->Commit(); !st.ok()) {
    return absl::Status(st.code(),
                        fmt::format("\"{}\" in the archive: {}", name, std::string(st.message())));
  }
  c->digests[name] = writer->digest();
  return absl::OkStatus();
}

// libarchive's reader over an ArchiveSource.
struct Feed {
  ArchiveSource* source;
  absl::Status error;
};

la_ssize_t FeedRead(archive* a, void* data, const void** buffer) {
  auto* feed = static_cast<Feed*>(data);
  auto piece = (*feed->source)();
  if (!piece.ok()) {
    feed->error = piece.status();
    archive_set_error(a, EIO, "%s", std::string(piece.status().message()).c_str());
    return -1;
  }
  *buffer = piece->data();
  return static_cast<la_ssize_t>(piece->size());
}

absl::StatusOr<Contents> ReadArchive(ArchiveSource source, const std::string& what,
                                     ContentStore* store) {
  std::unique_ptr<archive, decltype(&archive_read_free)> in(archive_read_new(), archive_read_free);
  archive_read_support_filter_all(in.get());
  archive_read_support_format_tar(in.get());
  Feed feed{&source, absl::OkStatus()};
  if (archive_read_open(in.get(), &feed, nullptr, FeedRead, nullptr) != ARCHIVE_OK) {
    if (!feed.error.ok()) return feed.error;
    return absl::InvalidArgumentError(
        fmt::format("cannot read {}: {}", what, archive_error_string(in.get())));
  }
  Contents c;
  archive_entry* entry = nullptr;
  int r;
  while ((r = archive_read_next_header(in.get(), &entry)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
    const std::string name =
        Clean(archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "");
    const mode_t type = archive_entry_filetype(entry);
    if (type == AE_IFLNK && archive_entry_symlink(entry)) {
      const fs::path target = fs::path(name).parent_path() / archive_entry_symlink(entry);
      c.links[name] = target.lexically_normal().string();
    } else if (type == AE_IFREG) {
      if (auto st = StoreEntry(in.get(), name, store, &c); !st.ok()) {
        return feed.error.ok() ? st : feed.error;
      }
    }
  }
  if (!feed.error.ok()) return feed.error;
  if (r != ARCHIVE_EOF) {
    return absl::InvalidArgumentError(
        fmt::format("{} is not a whole tar archive: {}", what, archive_error_string(in.get())));
  }
  return c;
}

// The blob the archive holds at `path` (through links).
absl::StatusOr<std::string> DigestAt(const Contents& c, std::string path) {
  for (int hops = 0; hops < 10; ++hops) {
    if (auto it = c.digests.find(path); it != c.digests.end()) return it->second;
    auto link = c.links.find(path);
    if (link == c.links.end()) break;
    path = link->second;
  }
  return absl::InvalidArgumentError(fmt::format("the archive has no file \"{}\"", path));
}

absl::StatusOr<Descriptor> Described(const ContentStore& store, const std::string& digest,
                                     std::string_view media_type) {
  std::error_code ec;
  const auto size = fs::file_size(store.BlobPath(digest), ec);
  return Descriptor{.media_type = std::string(media_type),
                    .digest = digest,
                    .size = ec ? 0 : static_cast<int64_t>(size)};
}

Json DescriptorJson(const Descriptor& d) {
  return {{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}};
}

// `docker save`: an OCI manifest is made for each image from its config and layer tars.
absl::StatusOr<std::vector<ImportedImage>> FromDockerSave(const Contents& c, ContentStore* store) {
  const Json list = Json::parse(c.meta.at("manifest.json"), nullptr, false);
  if (!list.is_array()) return absl::InvalidArgumentError("manifest.json is not a list of images");
  std::vector<ImportedImage> out;
  for (const auto& image : list) {
    if (!image.is_object() || !image.contains("Config") || !image["Config"].is_string()) {
      return absl::InvalidArgumentError("an image of manifest.json has no \"Config\"");
    }
    MKUBE_ASSIGN_OR_RETURN(std::string config, DigestAt(c, image["Config"].get<std::string>()));
    MKUBE_ASSIGN_OR_RETURN(Descriptor cd,
                           Described(*store, config, "application/vnd.oci.image.config.v1+json"));
    Json manifest = {{"schemaVersion", 2},
                     {"mediaType", kOciManifest},
                     {"config", DescriptorJson(cd)},
                     {"layers", Json::array()}};
    for (const auto& layer : image.value("Layers", Json::array())) {
      if (!layer.is_string())
        return absl::InvalidArgumentError("a layer of manifest.json is not a path");
      MKUBE_ASSIGN_OR_RETURN(std::string digest, DigestAt(c, layer.get<std::string>()));
      MKUBE_ASSIGN_OR_RETURN(Descriptor ld,
                             Described(*store, digest, "application/vnd.oci.image.layer.v1.tar"));
      manifest["layers"].push_back(DescriptorJson(ld));
    }
    const std::string body = manifest.dump();
    const std::string digest = Sha256Of(body);
    MKUBE_RETURN_IF_ERROR(store->PutBlob(digest, body));
    ImportedImage imported{.digest = digest};
    for (const auto& tag : image.value("RepoTags", Json::array())) {
      if (!tag.is_string()) continue;
      MKUBE_ASSIGN_OR_RETURN(Reference ref, ParseReference(tag.get<std::string>()));
      MKUBE_RETURN_IF_ERROR(store->SetRef(ref, digest));
      imported.names.push_back(ref.String());
    }
    out.push_back(std::move(imported));
  }
  return out;
}

// An OCI layout: index.json names the images; each must be whole in the store.
absl::StatusOr<std::vector<ImportedImage>> FromOciLayout(const Contents& c, ContentStore* store) {
  MKUBE_ASSIGN_OR_RETURN(Document index, ParseDocument(c.meta.at("index.json"), kOciIndex));
  if (!index.is_index) return absl::InvalidArgumentError("index.json is not an image index");
  const Json raw = Json::parse(c.meta.at("index.json"));
  std::vector<ImportedImage> out;
  for (size_t i = 0; i < index.index.manifests.size(); ++i) {
    const Descriptor& d = index.index.manifests[i];
    if (!store->HasBlob(d.digest)) {
      return absl::InvalidArgumentError(fmt::format("the layout lacks the manifest {}", d.digest));
    }
    ImportedImage imported{.digest = d.digest};
    const Json annotations = raw["manifests"][i].value("annotations", Json::object());
    for (const char* key : {"io.containerd.image.name", "org.opencontainers.image.ref.name"}) {
      auto name = annotations.find(key);
      if (name == annotations.end() || !name->is_string()) continue;
      auto ref = ParseReference(name->get<std::string>());
      if (!ref.ok()) continue;  // a bare tag names no repository
      MKUBE_RETURN_IF_ERROR(store->SetRef(*ref, d.digest));
      imported.names.push_back(ref->String());
      break;
    }
    out.push_back(std::move(imported));
  }
  return out;
}

}  // namespace

namespace {

// A file's bytes as an archive source.
ArchiveSource FileSource(const std::string& file) {
  auto in = std::make_shared<std::ifstream>(file, std::ios::binary);
  auto buffer = std::make_shared<std::string>(256 << 10, '\0');
  return [file, in, buffer]() -> absl::StatusOr<std::string_view> {
    if (!*in && !in->eof()) return absl::NotFoundError(fmt::format("cannot open {}", file));
    in->read(buffer->data(), static_cast<std::streamsize>(buffer->size()));
    if (in->bad()) return absl::DataLossError(fmt::format("cannot read {}", file));
    return std::string_view(buffer->data(), static_cast<size_t>(in->gcount()));
  };
}

}  // namespace

absl::StatusOr<std::vector<ImportedImage>> ImportArchive(const std::string& file,
                                                         ContentStore* store) {
  return ImportArchive(FileSource(file), file, store);
}

absl::StatusOr<std::vector<ImportedImage>> ImportArchive(ArchiveSource source,
                                                         const std::string& file,
                                                         ContentStore* store) {
  MKUBE_ASSIGN_OR_RETURN(Contents c, ReadArchive(std::move(source), file, store));
  if (c.meta.count("index.json")) return FromOciLayout(c, store);
  if (c.meta.count("manifest.json")) return FromDockerSave(c, store);
  return absl::InvalidArgumentError(fmt::format(
      "{} is neither a docker save archive nor an OCI image layout (it has no manifest.json or "
      "index.json)",
      file));
}

}  // namespace mkube::agent::image
