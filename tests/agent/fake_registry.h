#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/image/archive_import.h"
#include "agent/image/digest.h"
#include "agent/image/manifest.h"
#include "base/http/server.h"

// A registry of the tests' own on the HTTP server: the Distribution API's manifests and blobs,
// a token service, basic authentication, redirects to storage, error bodies, and knobs to
// make it lie or serve corrupt bytes.
namespace mkube::agent::image {

using http::ExchangePtr;
using http::Request;
using http::Response;

constexpr char kBasicUserPass[] = "Basic dXNlcjpwYXNz";  // user:pass

class FakeRegistry {
 public:
  enum class Auth { kNone, kToken, kBasic };
  explicit FakeRegistry(Auth auth) : auth_(auth) {
    server_ =
        std::make_unique<http::Server>(http::ServerOptions{.listen = "127.0.0.1:0"},
                                       [this](Request r, ExchangePtr ex) { ex->Finish(Serve(r)); });
    EXPECT_TRUE(server_->Start().ok());
  }
  std::string host() const { return "127.0.0.1:" + std::to_string(server_->port()); }

  // Adds a manifest under `repo:tag` and by its digest; returns the digest.
  std::string AddManifest(const std::string& repo, const std::string& tag, const std::string& body,
                          const std::string& media_type = std::string(kOciManifest)) {
    const std::string digest = Sha256Of(body);
    types_[body] = media_type;
    manifests_[repo + ":" + tag] = body;
    manifests_[repo + ":" + digest] = body;
    return digest;
  }
  std::string AddBlob(const std::string& bytes) {
    blobs_[Sha256Of(bytes)] = bytes;
    return Sha256Of(bytes);
  }
  // Adds a small image (one layer: bin/sh and etc/passwd with a user app; Entrypoint /bin/sh,
  // User app, WorkingDir /srv) under `repo:tag`; returns its manifest's digest.
  std::string AddImage(const std::string& repo, const std::string& tag);
  bool lie_about_digests = false;
  std::atomic<int> token_requests{0};
  std::atomic<int> blob_requests{0};
  std::chrono::milliseconds blob_delay{0};  // before each blob is served
  // Serves these bytes for a blob instead of its own (a corrupted layer), while set.
  std::map<std::string, std::string> corrupt;

 private:
  Response Serve(const Request& r) {
    if (r.path.rfind("/storage/", 0) == 0) return Blob(r.path.substr(9));
    if (r.path == "/token") return Token(r);
    const std::string& auth = r.Header("authorization");
    if (auth_ == Auth::kToken && auth != "Bearer t0k") {
      return Refuse("Bearer realm=\"http://" + host() + "/token\",service=\"fake\"");
    }
    if (auth_ == Auth::kBasic && auth != kBasicUserPass) return Refuse("Basic realm=\"fake\"");
    const std::string rest = r.path.substr(4);  // after "/v2/"
    if (const size_t m = rest.find("/manifests/"); m != std::string::npos) {
      auto it = manifests_.find(rest.substr(0, m) + ":" + rest.substr(m + 11));
      if (it == manifests_.end()) return Error(404, "MANIFEST_UNKNOWN", "manifest unknown");
      const std::string said = lie_about_digests ? Sha256Of("other") : Sha256Of(it->second);
      return {.content_type = types_.at(it->second),
              .headers = {{"Docker-Content-Digest", said}},
              .body = it->second};
    }
    if (const size_t b = rest.find("/blobs/"); b != std::string::npos) {
      const std::string digest = rest.substr(b + 7);
      if (!blobs_.count(digest)) return Error(404, "BLOB_UNKNOWN", "blob unknown to registry");
      return {.status = 307, .headers = {{"Location", "/storage/" + digest}}};
    }
    return Error(404, "NAME_UNKNOWN", "repository name not known to registry");
  }
  Response Token(const Request& r) {
    ++token_requests;
    if (r.Header("authorization") != kBasicUserPass)
      return Error(401, "UNAUTHORIZED", "bad credentials");
    if (r.query.find("scope=repository%3Ateam%2Fapp%3Apull") == std::string::npos) {
      return Error(400, "DENIED", "unexpected scope: " + r.query);
    }
    return {.body = R"({"token":"t0k","expires_in":300})"};
  }
  Response Blob(const std::string& digest) {
    ++blob_requests;
    std::this_thread::sleep_for(blob_delay);
    if (auto bad = corrupt.find(digest); bad != corrupt.end()) {
      return {.content_type = "application/octet-stream", .body = bad->second};
    }
    auto it = blobs_.find(digest);
    if (it == blobs_.end()) return Error(404, "BLOB_UNKNOWN", "blob unknown");
    return {.content_type = "application/octet-stream", .body = it->second};
  }
  static Response Refuse(const std::string& challenge) {
    Response r = Error(401, "UNAUTHORIZED", "authentication required");
    r.headers.emplace_back("WWW-Authenticate", challenge);
    return r;
  }
  static Response Error(int status, const std::string& code, const std::string& message) {
    return {.status = status,
            .body = R"({"errors":[{"code":")" + code + R"(","message":")" + message + R"("}]})"};
  }

  const Auth auth_;
  std::map<std::string, std::string> manifests_, blobs_, types_;
  std::unique_ptr<http::Server> server_;
};

// A file of an archive: its bytes, or (`link`) the target of a symbolic link.
struct TarEntry {
  std::string path, content;
  bool link = false;
};

// A tar archive's bytes holding `files`, in their order; gzip'd if asked.
inline std::string Tar(const std::vector<TarEntry>& files, bool gzip) {
  size_t total = 64 << 10;
  for (const auto& f : files) total += f.content.size() + 1024;
  std::string out(total, '\0');
  size_t used = 0;
  archive* a = archive_write_new();
  if (gzip) archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  archive_write_open_memory(a, out.data(), out.size(), &used);
  for (const auto& f : files) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, f.path.c_str());
    archive_entry_set_filetype(e, f.link ? AE_IFLNK : AE_IFREG);
    archive_entry_set_perm(e, 0755);
    if (f.link) {
      archive_entry_set_symlink(e, f.content.c_str());
    } else {
      archive_entry_set_size(e, static_cast<la_int64_t>(f.content.size()));
    }
    archive_write_header(a, e);
    if (!f.link) archive_write_data(a, f.content.data(), f.content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  out.resize(used);
  return out;
}

// A gzip'd tar layer's bytes holding `files`.
inline std::string TarGz(const std::vector<TarEntry>& files) { return Tar(files, true); }

inline std::string FakeRegistry::AddImage(const std::string& repo, const std::string& tag) {
  const std::string layer =
      TarGz({{"bin/sh", "#!static"}, {"etc/passwd", "app:x:10:10::/:/bin/sh\n"}});
  const std::string config =
      R"({"os":"linux","architecture":"amd64","config":{"Entrypoint":["/bin/sh"],)"
      R"("Cmd":["-c","true"],"Env":["PATH=/bin"],"User":"app","WorkingDir":"/srv"}})";
  const std::string layer_digest = AddBlob(layer), config_digest = AddBlob(config);
  return AddManifest(repo, tag,
                     R"({"schemaVersion":2,"config":{"digest":")" + config_digest + R"(","size":)" +
                         std::to_string(config.size()) + R"(},"layers":[{"digest":")" +
                         layer_digest + R"(","size":)" + std::to_string(layer.size()) + "}]}");
}

// A `docker save` archive of one small image (bin/sh; Cmd sh) under each of `names`.
inline std::string ImageArchive(const std::vector<std::string>& names) {
  std::string tags;
  for (const auto& n : names) tags += (tags.empty() ? "\"" : ",\"") + n + "\"";
  return Tar({{"cfg.json", R"({"os":"linux","architecture":"amd64","config":{"Cmd":["sh"]}})"},
              {"layer.tar", Tar({{"bin/sh", "#!static"}}, false)},
              {"manifest.json",
               R"([{"Config":"cfg.json","RepoTags":[)" + tags + R"(],"Layers":["layer.tar"]}])"}},
             false);
}

// An archive source giving `bytes` in one piece, then its end.
inline ArchiveSource WholeArchive(std::string bytes) {
  auto given = std::make_shared<bool>(false);
  auto kept = std::make_shared<std::string>(std::move(bytes));
  return [given, kept]() -> absl::StatusOr<std::string_view> {
    if (*given) return std::string_view();
    *given = true;
    return std::string_view(*kept);
  };
}

}  // namespace mkube::agent::image
