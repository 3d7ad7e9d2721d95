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
#include "tests/agent/fake_registry.h"

namespace mkube::agent::image {
namespace {

RegistryClient ClientFor(const FakeRegistry& r, bool with_credentials) {
  RegistryOptions o;
  o.insecure.insert(r.host());
  if (with_credentials) {
    o.credentials = [host = r.host()](const std::string& registry) -> std::optional<Credentials> {
      if (registry != host) return std::nullopt;
      return Credentials{.username = "user", .password = "pass"};
    };
  }
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
  ASSERT_TRUE(client
                  .GetBlob(Ref(registry, "team/app:v1"), blob,
                           [&](std::string_view b) {
                             streamed.append(b);
                             ++pieces;
                             return absl::OkStatus();
                           })
                  .ok());
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
  EXPECT_EQ(refused.status().message(), "the registry " + registry.host() +
                                            " asks for credentials, and the node has none for it");
  RegistryOptions o;
  o.insecure.insert("127.0.0.1:1");
  auto unreachable = RegistryClient(o).GetManifest(*ParseReference("127.0.0.1:1/app"), "latest");
  EXPECT_EQ(unreachable.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(
      unreachable.status().message().find("cannot get http://127.0.0.1:1/v2/app/manifests/latest"),
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
