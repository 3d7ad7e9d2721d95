#include "agent/image/manifest.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "agent/image/digest.h"
#include "fmt/format.h"

namespace mkube::agent::image {
namespace {

using Json = nlohmann::json;

std::string StringAt(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<std::string> StringsAt(const Json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& s : *it) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

absl::StatusOr<Descriptor> DescriptorOf(const Json& j, std::string_view where) {
  if (!j.is_object()) return absl::InvalidArgumentError(fmt::format("{} is not an object", where));
  Descriptor d{.media_type = StringAt(j, "mediaType"), .digest = StringAt(j, "digest")};
  if (DigestHex(d.digest).empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{} has no sha256 digest (\"{}\")", where, d.digest));
  }
  if (auto size = j.find("size"); size != j.end() && size->is_number_integer()) {
    d.size = size->get<int64_t>();
  }
  if (auto p = j.find("platform"); p != j.end() && p->is_object()) {
    d.os = StringAt(*p, "os");
    d.architecture = StringAt(*p, "architecture");
    d.variant = StringAt(*p, "variant");
  }
  return d;
}

}  // namespace

absl::StatusOr<Document> ParseDocument(std::string_view json, std::string_view content_type) {
  const Json j = Json::parse(json, nullptr, false);
  if (!j.is_object()) return absl::InvalidArgumentError("the image manifest is not a JSON object");
  if (auto v = j.find("schemaVersion"); v != j.end() && *v == 1) {
    return absl::InvalidArgumentError(
        "the image has a Docker schema 1 manifest, which is not supported (push it again with a "
        "current client to get schema 2)");
  }
  std::string type = StringAt(j, "mediaType");
  if (type.empty()) type = std::string(content_type.substr(0, content_type.find(';')));
  Document doc;
  doc.is_index =
      type == kOciIndex || type == kDockerList || (type.empty() && j.contains("manifests"));
  if (doc.is_index) {
    auto list = j.find("manifests");
    if (list == j.end() || !list->is_array()) {
      return absl::InvalidArgumentError("the image index has no \"manifests\" list");
    }
    for (size_t i = 0; i < list->size(); ++i) {
      auto d = DescriptorOf((*list)[i], fmt::format("the index's manifest {}", i));
      if (!d.ok()) return d.status();
      doc.index.manifests.push_back(*std::move(d));
    }
    return doc;
  }
  auto config = DescriptorOf(j.value("config", Json()), "the manifest's config");
  if (!config.ok()) return config.status();
  doc.manifest.config = *std::move(config);
  auto layers = j.find("layers");
  if (layers == j.end() || !layers->is_array()) {
    return absl::InvalidArgumentError("the image manifest has no \"layers\" list");
  }
  for (size_t i = 0; i < layers->size(); ++i) {
    auto d = DescriptorOf((*layers)[i], fmt::format("the manifest's layer {}", i));
    if (!d.ok()) return d.status();
    doc.manifest.layers.push_back(*std::move(d));
  }
  return doc;
}

absl::StatusOr<Descriptor> ForPlatform(const Index& index, std::string_view os,
                                       std::string_view architecture) {
  std::vector<std::string> have;
  for (const auto& m : index.manifests) {
    if (m.os == os && m.architecture == architecture) return m;
    if (!m.os.empty()) have.push_back(m.os + "/" + m.architecture);
  }
  return absl::NotFoundError(fmt::format("the image has no manifest for {}/{} (it has: {})", os,
                                         architecture,
                                         have.empty() ? "none" : absl::StrJoin(have, ", ")));
}

absl::StatusOr<ImageConfig> ParseImageConfig(std::string_view json) {
  const Json j = Json::parse(json, nullptr, false);
  if (!j.is_object()) return absl::InvalidArgumentError("the image config is not a JSON object");
  ImageConfig c{.os = StringAt(j, "os"), .architecture = StringAt(j, "architecture")};
  if (auto run = j.find("config"); run != j.end() && run->is_object()) {
    c.entrypoint = StringsAt(*run, "Entrypoint");
    c.cmd = StringsAt(*run, "Cmd");
    c.env = StringsAt(*run, "Env");
    c.working_dir = StringAt(*run, "WorkingDir");
    c.user = StringAt(*run, "User");
    if (auto ports = run->find("ExposedPorts"); ports != run->end() && ports->is_object()) {
      for (const auto& [port, _] : ports->items()) c.exposed_ports.push_back(port);
    }
  }
  if (auto rootfs = j.find("rootfs"); rootfs != j.end() && rootfs->is_object()) {
    c.diff_ids = StringsAt(*rootfs, "diff_ids");
  }
  return c;
}

}  // namespace mkube::agent::image
