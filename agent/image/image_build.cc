#include "agent/image/image_build.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/image/digest.h"
#include "agent/image/reference.h"
#include "base/platform.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::image {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// "${NAME}" replaced by vars[NAME] in every string of `j`.
absl::Status Substitute(Json& j, const std::map<std::string, std::string>& vars) {
  if (j.is_object() || j.is_array()) {
    for (auto& v : j) MKUBE_RETURN_IF_ERROR(Substitute(v, vars));
    return absl::OkStatus();
  }
  if (!j.is_string()) return absl::OkStatus();
  std::string s = j.get<std::string>(), out;
  for (size_t at = 0;;) {
    const size_t open = s.find("${", at);
    if (open == std::string::npos) {
      out += s.substr(at);
      break;
    }
    const size_t close = s.find('}', open);
    if (close == std::string::npos)
      return absl::InvalidArgumentError("unclosed ${ in \"" + s + "\"");
    const std::string name = s.substr(open + 2, close - open - 2);
    auto it = vars.find(name);
    if (it == vars.end()) {
      return absl::InvalidArgumentError(
          fmt::format("\"{}\" names ${{{}}}, which is not set", s, name));
    }
    out += s.substr(at, open - at) + it->second;
    at = close + 1;
  }
  j = out;
  return absl::OkStatus();
}

// What a command printed on its standard output (its exit status ignored).
std::string Output(const std::string& command) {
  std::string out;
  std::unique_ptr<FILE, decltype(&pclose)> p(popen(command.c_str(), "r"), pclose);
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p.get())) > 0) out.append(buf, n);
  return out;
}

std::string Quoted(const std::string& path) {
  std::string q = "'";
  for (char c : path) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The shared libraries `program` loads (and the dynamic loader), as ldd names them; none for a
// static program. A library ldd cannot find, or no answer from ldd, is an error: the image
// would not run.
absl::StatusOr<std::vector<std::string>> Libraries(const std::string& program) {
  const std::string said = Output("ldd " + Quoted(program) + " 2>&1");
  if (said.find("not a dynamic executable") != std::string::npos ||
      said.find("statically linked") != std::string::npos) {
    return std::vector<std::string>{};
  }
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(said, '\n', absl::SkipWhitespace())) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::StrContains(line, "not found")) {
      return absl::NotFoundError(fmt::format("{}: ldd says {}", program, std::string(line)));
    }
    const size_t arrow = line.find("=> ");
    absl::string_view path = arrow == absl::string_view::npos ? line : line.substr(arrow + 3);
    path = path.substr(0, path.find(' '));
    if (!path.empty() && path[0] == '/') out.emplace_back(path);
  }
  if (out.empty()) {
    return absl::FailedPreconditionError(
        fmt::format("ldd named no library of {} (is ldd installed?): {}", program, said));
  }
  return out;
}

// One layer's tar, in memory, its entries in order, parent folders first.
class LayerWriter {
 public:
  LayerWriter() : a_(archive_write_new(), archive_write_free) {
    archive_write_set_format_pax_restricted(a_.get());
    archive_write_set_bytes_in_last_block(a_.get(), 1);
    archive_write_open(a_.get(), this, nullptr, &LayerWriter::Append, nullptr);
  }
  absl::Status File(const std::string& to, const std::string& from) {
    std::ifstream in(from, std::ios::binary);
    if (!in) return absl::NotFoundError(fmt::format("cannot read {}", from));
    std::stringstream bytes;
    bytes << in.rdbuf();
    struct stat st {};
    stat(from.c_str(), &st);
    const mode_t mode = (st.st_mode & 0111) ? 0755 : 0644;
    ++files_;
    bytes_ += static_cast<int64_t>(bytes.str().size());
    return Entry(to, AE_IFREG, mode, bytes.str(), "");
  }
  absl::Status Link(const std::string& to, const std::string& target) {
    return Entry(to, AE_IFLNK, 0777, "", target);
  }
  // The tar's bytes; the writer is spent.
  std::string Finish() {
    archive_write_close(a_.get());
    return std::move(out_);
  }
  int64_t files() const { return files_; }
  int64_t bytes() const { return bytes_; }

 private:
  static la_ssize_t Append(archive*, void* self, const void* buf, size_t n) {
    static_cast<LayerWriter*>(self)->out_.append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
  }
  absl::Status Entry(const std::string& path, unsigned type, mode_t mode, const std::string& data,
                     const std::string& target) {
    const std::string rel = fs::path(path).relative_path().lexically_normal().string();
    if (rel.empty() || rel.rfind("..", 0) == 0) {
      return absl::InvalidArgumentError(fmt::format("\"{}\" is not a path in the image", path));
    }
    if (!written_.insert(rel).second) return absl::OkStatus();  // a library two programs load
    // Parent folders first.
    for (fs::path p = fs::path(rel).parent_path(); !p.empty(); p = p.parent_path()) {
      if (written_.count(p.string())) break;
      MKUBE_RETURN_IF_ERROR(Entry("/" + p.string(), AE_IFDIR, 0755, "", ""));
    }
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> e(archive_entry_new(),
                                                                    archive_entry_free);
    archive_entry_set_pathname(e.get(), rel.c_str());
    archive_entry_set_filetype(e.get(), type);
    archive_entry_set_perm(e.get(), mode);
    archive_entry_set_uid(e.get(), 0);
    archive_entry_set_gid(e.get(), 0);
    archive_entry_set_mtime(e.get(), 0, 0);
    if (type == AE_IFLNK) archive_entry_set_symlink(e.get(), target.c_str());
    if (type == AE_IFREG) archive_entry_set_size(e.get(), static_cast<la_int64_t>(data.size()));
    if (archive_write_header(a_.get(), e.get()) != ARCHIVE_OK ||
        (!data.empty() && archive_write_data(a_.get(), data.data(), data.size()) < 0)) {
      return absl::InternalError(
          fmt::format("writing {}: {}", rel, archive_error_string(a_.get())));
    }
    return absl::OkStatus();
  }

  // Declared before the archive, which writes its last block into it when freed.
  std::string out_;
  std::set<std::string> written_;
  int64_t files_ = 0, bytes_ = 0;
  std::unique_ptr<archive, decltype(&archive_write_free)> a_;
};

struct Layer {
  std::string tar;
  int64_t files = 0, bytes = 0;
};

absl::StatusOr<Layer> MakeLayer(const ImageSpec& spec) {
  LayerWriter w;
  for (const auto& f : spec.files) {
    MKUBE_RETURN_IF_ERROR(w.File(f.to, f.from));
    if (!f.libraries) continue;
    MKUBE_ASSIGN_OR_RETURN(std::vector<std::string> libraries, Libraries(f.from));
    for (const auto& lib : libraries) {
      std::error_code ec;
      MKUBE_RETURN_IF_ERROR(w.File(lib, fs::canonical(lib, ec).string()));
    }
  }
  if (!spec.busybox.empty()) {
    const std::string* host = nullptr;
    for (const auto& f : spec.files) {
      if (f.to == spec.busybox) host = &f.from;
    }
    if (!host) {
      return absl::InvalidArgumentError(
          fmt::format("{}: busybox {} is not one of its files", spec.name, spec.busybox));
    }
    const std::string applets = Output(Quoted(*host) + " --list-full");
    if (applets.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {} --list-full printed nothing", spec.name, *host));
    }
    for (absl::string_view applet : absl::StrSplit(applets, '\n', absl::SkipEmpty())) {
      const std::string path = "/" + std::string(applet);
      if (path != spec.busybox) MKUBE_RETURN_IF_ERROR(w.Link(path, spec.busybox));
    }
  }
  for (const auto& [path, target] : spec.links) MKUBE_RETURN_IF_ERROR(w.Link(path, target));
  Layer layer{.files = w.files(), .bytes = w.bytes()};
  layer.tar = w.Finish();
  return layer;
}

Json DescriptorOf(const char* media_type, const std::string& bytes) {
  return {{"mediaType", media_type},
          {"digest", Sha256Of(bytes)},
          {"size", static_cast<int64_t>(bytes.size())}};
}

}  // namespace

absl::StatusOr<std::vector<ImageSpec>> ParseImageSpecs(
    const std::string& text, const std::map<std::string, std::string>& vars) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array())
    return absl::InvalidArgumentError("the spec is not a JSON list");
  MKUBE_RETURN_IF_ERROR(Substitute(j, vars));
  std::vector<ImageSpec> out;
  for (const auto& i : j) {
    if (!i.is_object() || !i.value("name", Json()).is_string()) {
      return absl::InvalidArgumentError("an image of the spec has no \"name\"");
    }
    ImageSpec spec{.name = i["name"].get<std::string>()};
    MKUBE_RETURN_IF_ERROR(ParseReference(spec.name).status());
    auto bad = [&](const char* what) {
      return absl::InvalidArgumentError(fmt::format("image {}: {}", spec.name, what));
    };
    const Json files = i.value("files", Json::array());
    if (!files.is_array()) return bad("\"files\" is a list");
    for (const auto& f : files) {
      if (!f.is_object() || !f.value("from", Json()).is_string() ||
          !f.value("to", Json()).is_string()) {
        return bad("each file needs \"from\" and \"to\"");
      }
      if (f.contains("libraries") && !f["libraries"].is_boolean()) {
        return bad("a file's \"libraries\" is true or false");
      }
      spec.files.push_back({f["from"], f["to"], f.value("libraries", false)});
    }
    const Json links = i.value("links", Json::object());
    if (!links.is_object()) return bad("\"links\" is an object");
    for (const auto& [path, target] : links.items()) {
      if (!target.is_string()) return bad("each link's target is a string");
      spec.links[path] = target.get<std::string>();
    }
    if (i.contains("busybox") && !i["busybox"].is_string()) return bad("\"busybox\" is a path");
    spec.busybox = i.value("busybox", "");
    spec.config = i.value("config", Json::object());
    if (!spec.config.is_object()) return bad("\"config\" is an object");
    out.push_back(std::move(spec));
  }
  return out;
}

absl::StatusOr<std::vector<BuiltImage>> WriteImageLayout(const std::vector<ImageSpec>& images,
                                                         const std::string& out) {
  std::map<std::string, std::string> blobs;  // digest -> bytes
  Json index = {{"schemaVersion", 2}, {"manifests", Json::array()}};
  std::vector<BuiltImage> built;
  for (const auto& spec : images) {
    MKUBE_ASSIGN_OR_RETURN(Layer layer, MakeLayer(spec));
    const std::string layer_digest = Sha256Of(layer.tar);
    const std::string config = Json{{"architecture", HostArchitecture()},
                                    {"os", "linux"},
                                    {"config", spec.config},
                                    {"rootfs", {{"type", "layers"}, {"diff_ids", {layer_digest}}}}}
                                   .dump();
    const std::string manifest =
        Json{{"schemaVersion", 2},
             {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
             {"config", DescriptorOf("application/vnd.oci.image.config.v1+json", config)},
             {"layers", {DescriptorOf("application/vnd.oci.image.layer.v1.tar", layer.tar)}}}
            .dump();
    MKUBE_ASSIGN_OR_RETURN(Reference ref, ParseReference(spec.name));
    Json d = DescriptorOf("application/vnd.oci.image.manifest.v1+json", manifest);
    d["annotations"] = {{"io.containerd.image.name", ref.String()},
                        {"org.opencontainers.image.ref.name", ref.tag}};
    index["manifests"].push_back(d);
    built.push_back({spec.name, Sha256Of(manifest), layer.files, layer.bytes});
    blobs[layer_digest] = std::move(layer.tar);
    blobs[Sha256Of(config)] = config;
    blobs[Sha256Of(manifest)] = manifest;
  }
  // The layout, as a tar: written beside its place, renamed into it (removed on an error).
  const std::string tmp = out + ".writing";
  struct Cleanup {
    const std::string& path;
    bool done = false;
    ~Cleanup() {
      std::error_code ec;
      if (!done) fs::remove(path, ec);
    }
  } cleanup{tmp};
  std::unique_ptr<archive, decltype(&archive_write_free)> a(archive_write_new(),
                                                            archive_write_free);
  archive_write_set_format_pax_restricted(a.get());
  if (archive_write_open_filename(a.get(), tmp.c_str()) != ARCHIVE_OK) {
    return absl::InternalError(
        fmt::format("cannot write {}: {}", tmp, archive_error_string(a.get())));
  }
  auto add = [&](const std::string& name, const std::string& bytes) -> absl::Status {
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> e(archive_entry_new(),
                                                                    archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(bytes.size()));
    if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK ||
        archive_write_data(a.get(), bytes.data(), bytes.size()) < 0) {
      return absl::InternalError(fmt::format("writing {}: {}", tmp, archive_error_string(a.get())));
    }
    return absl::OkStatus();
  };
  MKUBE_RETURN_IF_ERROR(add("oci-layout", R"({"imageLayoutVersion":"1.0.0"})"));
  MKUBE_RETURN_IF_ERROR(add("index.json", index.dump()));
  for (const auto& [digest, bytes] : blobs) {
    MKUBE_RETURN_IF_ERROR(add("blobs/sha256/" + DigestHex(digest), bytes));
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) {
    return absl::InternalError(fmt::format("writing {}: {}", tmp, archive_error_string(a.get())));
  }
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) return absl::InternalError(fmt::format("cannot write {}: {}", out, ec.message()));
  cleanup.done = true;
  return built;
}

}  // namespace mkube::agent::image
