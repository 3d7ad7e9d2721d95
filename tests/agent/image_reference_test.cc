// Image references as Kubernetes reads them, and the content digests of OCI.
#include <gtest/gtest.h>

#include "agent/image/digest.h"
#include "agent/image/reference.h"

namespace mkube::agent::image {
namespace {

const std::string kDigest = "sha256:" + std::string(64, 'a');

TEST(Reference, DockerHubsDefaultsAndOtherRegistries) {
  struct Case {
    std::string text, full, familiar;
  };
  for (const Case& c : std::vector<Case>{
           {"alpine", "docker.io/library/alpine:latest", "alpine:latest"},
           {"python:3.12-slim", "docker.io/library/python:3.12-slim", "python:3.12-slim"},
           {"soscscs/myapp:v1", "docker.io/soscscs/myapp:v1", "soscscs/myapp:v1"},
           {"docker.io/library/nginx:latest", "docker.io/library/nginx:latest", "nginx:latest"},
           {"library/nginx", "docker.io/library/nginx:latest", "nginx:latest"},
           {"127.0.0.1:5000/app:v1", "127.0.0.1:5000/app:v1", "127.0.0.1:5000/app:v1"},
           {"127.0.0.1:5000/team/app", "127.0.0.1:5000/team/app:latest",
            "127.0.0.1:5000/team/app:latest"},
           {"localhost/app", "localhost/app:latest", "localhost/app:latest"},
           {"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10",
            "registry.k8s.io/pause:3.10"},
           {"quay.io/a_b/c__d-e.f:1.0_x", "quay.io/a_b/c__d-e.f:1.0_x",
            "quay.io/a_b/c__d-e.f:1.0_x"},
           {"quay.io/coreos/etcd@" + kDigest, "quay.io/coreos/etcd@" + kDigest,
            "quay.io/coreos/etcd@" + kDigest},
           {"busybox:1.36@" + kDigest, "docker.io/library/busybox:1.36@" + kDigest,
            "busybox:1.36@" + kDigest},
       }) {
    auto ref = ParseReference(c.text);
    ASSERT_TRUE(ref.ok()) << c.text << ": " << ref.status();
    EXPECT_EQ(ref->String(), c.full) << c.text;
    EXPECT_EQ(ref->Familiar(), c.familiar) << c.text;
  }
  auto pinned = ParseReference("quay.io/coreos/etcd@" + kDigest);
  EXPECT_EQ(pinned->tag, "");
  EXPECT_EQ(pinned->Selector(), kDigest);
  auto both = ParseReference("busybox:1.36@" + kDigest);
  EXPECT_EQ(both->Selector(), kDigest);  // a digest is what is pulled
  auto local = ParseReference("127.0.0.1:5000/team/app");
  EXPECT_EQ(local->registry, "127.0.0.1:5000");
  EXPECT_EQ(local->repository, "team/app");
  EXPECT_EQ(local->Selector(), "latest");
}

TEST(Reference, TheErrorSaysWhatIsWrong) {
  struct Case {
    std::string text, why;
  };
  for (const Case& c : std::vector<Case>{
           {"", "it is empty"},
           {"Alpine", "must be lower case"},
           {"alpine:", "the tag may hold only"},
           {"alpine:bad/tag", "\"alpine:bad\" is not a valid path component"},
           {"alpine@sha256:123", "the digest is not sha256: and 64 hex digits"},
           {"alpine@md5:" + std::string(64, 'a'), "the digest is not sha256"},
           {"team//app", "\"\" is not a valid path component"},
           {"team/-app", "\"-app\" is not a valid path component"},
           {"team/a...b", "\"a...b\" is not a valid path component"},
       }) {
    auto ref = ParseReference(c.text);
    ASSERT_FALSE(ref.ok()) << c.text;
    EXPECT_NE(ref.status().message().find(c.why), std::string::npos) << ref.status();
    EXPECT_NE(ref.status().message().find("invalid image reference \"" + c.text + "\""),
              std::string::npos)
        << ref.status();
  }
}

TEST(Digest, Sha256InPiecesAndItsHex) {
  EXPECT_EQ(Sha256Of("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(h.Finish(), Sha256Of("abc"));
  EXPECT_EQ(DigestHex(kDigest), std::string(64, 'a'));
  EXPECT_EQ(DigestHex("sha256:ABC"), "");
  EXPECT_EQ(DigestHex("sha512:" + std::string(64, 'a')), "");
}

}  // namespace
}  // namespace mkube::agent::image
