// The registry client against a registry of the test's own (the Distribution API's manifests
// and blobs, a token service, basic authentication, redirects to storage, error bodies).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "agent/image/digest.h"
#include "agent/image/manifest.h"
#include "agent/image/registry.h"
#include "base/http/server.h"

namespace mkube::agent::image {
namespace {

using http::ExchangePtr;
using http::Request;
using http::Response;

constexpr char kBasicUserPass[] = "Basic dXNlcjpwYXNz";  // user:pass

class FakeRegistry {
 public:
  enum class Auth { kNone, kToken, kBasic };
  explicit FakeRegistry(Auth auth) : auth_(auth) {
    server_ = std::make_unique<http::Server>(http::ServerOptions{.listen = "127.0.0.1:0"},
                                             [this](Request r, ExchangePtr ex) { ex->Finish(Serve(r)); });
    EXPECT_TRUE(server_->Start().ok());
  }
  std::string host() const { return "127.0.0.1:" + std::to_string(server_->port()); }

  // Adds a manifest under `repo:tag` and by its digest; returns the digest.
  std::string AddManifest(const std::string& repo, const std::string& tag, const std::string& body) {
    const std::string digest = Sha256Of(body);
    manifests_[repo + ":" + tag] = body;
    manifests_[repo + ":" + digest] = body;
    return digest;
  }
  std::string AddBlob(const std::string& bytes) {
    blobs_[Sha256Of(bytes)] = bytes;
    return Sha256Of(bytes);
  }
  bool lie_about_digests = false;
  std::atomic<int> token_requests{0};

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
      return {.content_type = std::string(kOciManifest),
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
    if (r.Header("authorization") != kBasicUserPass) return Error(401, "UNAUTHORIZED", "bad credentials");
    if (r.query.find("scope=repository%3Ateam%2Fapp%3Apull") == std::string::npos) {
      return Error(400, "DENIED", "unexpected scope: " + r.query);
    }
    return {.body = R"({"token":"t0k","expires_in":300})"};
  }
  Response Blob(const std::string& digest) {
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
  std::map<std::string, std::string> manifests_, blobs_;
  std::unique_ptr<http::Server> server_;
};

RegistryClient ClientFor(const FakeRegistry& r, bool with_credentials) {
  RegistryOptions o;
  o.insecure.insert(r.host());
  if (with_credentials) o.credentials[r.host()] = {.username = "user", .password = "pass"};
  return RegistryClient(o);
}

Reference Ref(const FakeRegistry& r, const std::string& rest) {
  return *ParseReference(r.host() + "/" + rest);
}

TEST(Registry, ATokenIsAskedForOnceAndManifestsAndBlobsCome) {
  FakeRegistry registry(FakeRegistry::Auth::kToken);
  const std::string manifest = R"({"schemaVersion":2,"layers":[]})";
  const std::string digest = registry.AddManifest("team/app", "v1", manifest);
  const std::string layer(3 << 20, 'L');
  const std::string blob = registry.AddBlob(layer);
  RegistryClient client = ClientFor(registry, true);
  auto got = client.GetManifest(Ref(registry, "team/app:v1"), "v1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->body, manifest);
  EXPECT_EQ(got->digest, digest);
  EXPECT_EQ(got->content_type, kOciManifest);
  ASSERT_TRUE(client.GetManifest(Ref(registry, "team/app@" + digest), digest).ok());
  std::string streamed;
  size_t pieces = 0;
  ASSERT_TRUE(client.GetBlob(Ref(registry, "team/app:v1"), blob, [&](std::string_view b) {
    streamed.append(b);
    ++pieces;
    return absl::OkStatus();
  }).ok());
  EXPECT_TRUE(streamed == layer);
  EXPECT_GT(pieces, 1u);  // handed on as it came, not gathered whole
  EXPECT_EQ(registry.token_requests.load(), 1);
}

TEST(Registry, RefusalsAndAbsencesSayWhat) {
  FakeRegistry registry(FakeRegistry::Auth::kToken);
  registry.AddManifest("team/app", "v1", "{}");
  RegistryClient anonymous = ClientFor(registry, false);
  auto refused = anonymous.GetManifest(Ref(registry, "team/app:v1"), "v1");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.status().message(), "the registry " + registry.host() +
                                            " refused to give a token without credentials: "
                                            "UNAUTHORIZED: bad credentials");
  RegistryClient client = ClientFor(registry, true);
  auto absent = client.GetManifest(Ref(registry, "team/app:v2"), "v2");
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(absent.status().message(), "the registry " + registry.host() +
                                           " answered 404 for manifest team/app:v2: "
                                           "MANIFEST_UNKNOWN: manifest unknown");
  auto no_blob = client.GetBlob(Ref(registry, "team/app:v1"), Sha256Of("x"),
                                [](std::string_view) { return absl::OkStatus(); });
  EXPECT_EQ(no_blob.code(), absl::StatusCode::kNotFound);
  // A sink's error ends the transfer with it.
  const std::string blob = registry.AddBlob(std::string(1 << 20, 'b'));
  auto stopped = client.GetBlob(Ref(registry, "team/app:v1"), blob, [](std::string_view) {
    return absl::DataLossError("the disk is full");
  });
  EXPECT_EQ(stopped.message(), "the disk is full");
}

TEST(Registry, AManifestThatIsNotWhatWasAskedForIsRefused) {
  FakeRegistry registry(FakeRegistry::Auth::kNone);
  const std::string digest = registry.AddManifest("app", "v1", R"({"a":1})");
  RegistryClient client = ClientFor(registry, false);
  registry.lie_about_digests = true;
  auto lied = client.GetManifest(Ref(registry, "app:v1"), "v1");
  EXPECT_EQ(lied.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(lied.status().message().find("its bytes hash to " + digest), std::string::npos)
      << lied.status();
}

TEST(Registry, BasicAuthenticationAndAnUnreachableRegistry) {
  FakeRegistry registry(FakeRegistry::Auth::kBasic);
  registry.AddManifest("app", "v1", "{}");
  EXPECT_TRUE(ClientFor(registry, true).GetManifest(Ref(registry, "app:v1"), "v1").ok());
  auto refused = ClientFor(registry, false).GetManifest(Ref(registry, "app:v1"), "v1");
  EXPECT_EQ(refused.status().message(),
            "the registry " + registry.host() + " asks for credentials, and the node has none for it");
  RegistryOptions o;
  o.insecure.insert("127.0.0.1:1");
  auto unreachable = RegistryClient(o).GetManifest(*ParseReference("127.0.0.1:1/app"), "latest");
  EXPECT_EQ(unreachable.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(unreachable.status().message().find("cannot get http://127.0.0.1:1/v2/app/manifests/latest"),
            std::string::npos)
      << unreachable.status();
}

TEST(Registry, ChallengesAreRead) {
  Challenge c = ParseChallenge(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull")");
  EXPECT_EQ(c.scheme, "bearer");
  EXPECT_EQ(c.params["realm"], "https://auth.docker.io/token");
  EXPECT_EQ(c.params["service"], "registry.docker.io");
  EXPECT_EQ(c.params["scope"], "repository:library/alpine:pull");
  EXPECT_EQ(ParseChallenge("Basic realm=fake").params["realm"], "fake");
}

}  // namespace
}  // namespace mkube::agent::image
