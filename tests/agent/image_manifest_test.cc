// Image indexes, manifests and configs in OCI's and Docker's schema 2 forms.
#include <gtest/gtest.h>

#include "agent/image/manifest.h"

namespace mkube::agent::image {
namespace {

const std::string kA = "sha256:" + std::string(64, 'a');
const std::string kB = "sha256:" + std::string(64, 'b');
const std::string kC = "sha256:" + std::string(64, 'c');

TEST(Manifest, AnIndexNamesAManifestPerPlatform) {
  const std::string index =
      R"({"schemaVersion":2,"mediaType":")" + std::string(kOciIndex) +
      R"(","manifests":[
      {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" +
      kA +
      R"(","size":100,"platform":{"os":"linux","architecture":"arm64","variant":"v8"}},
      {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" +
      kB + R"(","size":200,"platform":{"os":"linux","architecture":"amd64"}}]})";
  auto doc = ParseDocument(index);
  ASSERT_TRUE(doc.ok()) << doc.status();
  ASSERT_TRUE(doc->is_index);
  ASSERT_EQ(doc->index.manifests.size(), 2u);
  EXPECT_EQ(doc->index.manifests[0].variant, "v8");
  auto amd64 = ForPlatform(doc->index, "linux", "amd64");
  ASSERT_TRUE(amd64.ok());
  EXPECT_EQ(amd64->digest, kB);
  EXPECT_EQ(amd64->size, 200);
  auto s390 = ForPlatform(doc->index, "linux", "s390x");
  EXPECT_EQ(s390.status().message(),
            "the image has no manifest for linux/s390x (it has: linux/arm64, linux/amd64)");
}

TEST(Manifest, DockerSchema2AndOciManifestsReadAlike) {
  for (const std::string& type : {std::string(kDockerManifest), std::string(kOciManifest)}) {
    const std::string json = R"({"schemaVersion":2,"mediaType":")" + type + R"(",
        "config":{"mediaType":"x","digest":")" +
                             kA + R"(","size":7},
        "layers":[{"mediaType":"y","digest":")" +
                             kB + R"(","size":10},
                  {"mediaType":"y","digest":")" +
                             kC + R"(","size":20}]})";
    auto doc = ParseDocument(json);
    ASSERT_TRUE(doc.ok()) << doc.status();
    EXPECT_FALSE(doc->is_index);
    EXPECT_EQ(doc->manifest.config.digest, kA);
    ASSERT_EQ(doc->manifest.layers.size(), 2u);
    EXPECT_EQ(doc->manifest.layers[1].digest, kC);
    EXPECT_EQ(doc->manifest.layers[1].size, 20);
  }
  // No mediaType in the document: the registry's Content-Type says which it is.
  auto list = ParseDocument(R"({"schemaVersion":2,"manifests":[]})",
                            std::string(kDockerList) + "; charset=utf-8");
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->is_index);
}

TEST(Manifest, WhatCannotBeReadIsNamed) {
  EXPECT_EQ(ParseDocument("[1]").status().message(), "the image manifest is not a JSON object");
  EXPECT_NE(
      ParseDocument(R"({"schemaVersion":1,"fsLayers":[]})").status().message().find("schema 1"),
      std::string::npos);
  EXPECT_EQ(ParseDocument(R"({"schemaVersion":2,"config":{"digest":"sha256:12"},"layers":[]})")
                .status()
                .message(),
            "the manifest's config has no sha256 digest (\"sha256:12\")");
  EXPECT_EQ(ParseDocument(R"({"schemaVersion":2,"config":{"digest":")" + kA + R"("}})")
                .status()
                .message(),
            "the image manifest has no \"layers\" list");
}

TEST(Manifest, TheConfigSaysHowToRunTheImage) {
  auto c = ParseImageConfig(R"({"architecture":"amd64","os":"linux",
      "config":{"Entrypoint":["/docker-entrypoint.sh"],"Cmd":["nginx","-g","daemon off;"],
                "Env":["PATH=/usr/bin","A=b"],"WorkingDir":"/srv","User":"101:101",
                "ExposedPorts":{"80/tcp":{}}},
      "rootfs":{"type":"layers","diff_ids":[")" +
                            kA + R"(",")" + kB + R"("]}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->entrypoint, std::vector<std::string>{"/docker-entrypoint.sh"});
  EXPECT_EQ(c->cmd, (std::vector<std::string>{"nginx", "-g", "daemon off;"}));
  EXPECT_EQ(c->env, (std::vector<std::string>{"PATH=/usr/bin", "A=b"}));
  EXPECT_EQ(c->working_dir, "/srv");
  EXPECT_EQ(c->user, "101:101");
  EXPECT_EQ(c->exposed_ports, std::vector<std::string>{"80/tcp"});
  EXPECT_EQ(c->diff_ids, (std::vector<std::string>{kA, kB}));
  EXPECT_EQ(c->architecture, "amd64");
  // An image with no config section runs what the pod says.
  auto bare = ParseImageConfig(R"({"os":"linux"})");
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare->entrypoint.empty() && bare->cmd.empty());
}

}  // namespace
}  // namespace mkube::agent::image
