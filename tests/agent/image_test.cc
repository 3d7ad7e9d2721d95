#include "agent/runtime/image.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/agent/fake_registry.h"
#include "tests/util/process.h"

namespace mkube::agent::runtime {
namespace {

class ImageStoreTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
};

TEST_F(ImageStoreTest, WhatIsNotAnImageReferenceIsRefused) {
  ImageStore images(OciOptions{.dir = dir_.Sub("oci")});
  for (const std::string bad : {"", "Nginx", "nginx:", "a//b", "nginx@sha256:abcd"}) {
    auto got = images.Pull(bad, false);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_FALSE(images.Present(bad)) << bad;
  }
}

// Where overlayfs stacks them, an image is its layers' own folders, each unpacked once, with
// no tree of the whole image made.
TEST_F(ImageStoreTest, ALayeredImageIsItsLayersFolders) {
  if (geteuid() != 0) GTEST_SKIP() << "overlay whiteouts need root";
  image::FakeRegistry remote(image::FakeRegistry::Auth::kNone);
  remote.AddImage("tools", "v1");
  OciOptions oci{.dir = dir_.Sub("oci"), .layered = true};
  oci.registry.insecure.insert(remote.host());
  ImageStore images(oci);
  auto img = images.Pull(remote.host() + "/tools:v1", false);
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_TRUE(img->root.empty());
  ASSERT_EQ(img->layers.size(), 1u);
  EXPECT_THAT(img->layers[0], ::testing::StartsWith(dir_.Sub("oci") + "/layers/sha256/"));
  EXPECT_EQ(testing::ReadFile(img->layers[0] + "/bin/sh"), "#!static");
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("oci") + "/roots"));
}

// An image is pulled from its registry into the content store and run from its layers
// applied into one tree (where overlayfs does not stack them).
TEST_F(ImageStoreTest, ImagesArePulledFromTheirRegistry) {
  image::FakeRegistry remote(image::FakeRegistry::Auth::kNone);
  remote.AddImage("tools", "v1");
  OciOptions oci{.dir = dir_.Sub("oci")};
  oci.registry.insecure.insert(remote.host());
  ImageStore images(oci);
  const std::string name = remote.host() + "/tools:v1";
  EXPECT_FALSE(images.Present(name));
  auto img = images.Pull(name, /*always=*/false);
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_EQ(img->layers, std::vector<std::string>{img->root});
  EXPECT_EQ(testing::ReadFile(img->root + "/bin/sh"), "#!static");
  EXPECT_EQ(img->config.entrypoint, std::vector<std::string>{"/bin/sh"});
  EXPECT_EQ(img->config.user, "app");
  EXPECT_EQ(img->config.working_dir, "/srv");
  EXPECT_EQ(img->ref.String(), name);
  EXPECT_THAT(img->id, ::testing::StartsWith(remote.host() + "/tools@sha256:"));
  EXPECT_GT(img->size_bytes, 0);
  EXPECT_TRUE(images.Present(name));
  // IfNotPresent: the node's copy, without asking the registry.
  const int asked = remote.blob_requests.load();
  ASSERT_TRUE(images.Pull(name, false).ok());
  EXPECT_EQ(remote.blob_requests.load(), asked);
  // Pulled again by its digest: one image still, named by its tag.
  const std::string by_digest = remote.host() + "/tools@" + img->id.substr(img->id.find('@') + 1);
  ASSERT_TRUE(images.Pull(by_digest, false).ok());
  std::vector<std::string> listed;
  for (const auto& i : images.List()) listed.push_back(i.ref.String());
  EXPECT_THAT(listed, ::testing::ElementsAre(name));
  auto absent = images.Pull(remote.host() + "/tools:v3", false);
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(absent.status().message()), ::testing::HasSubstr("MANIFEST_UNKNOWN"));
}

// Images loaded from an archive: every tag of one content is one image of the node, listed
// with its other names (its full names and its digest form) for the node's status.
TEST_F(ImageStoreTest, LoadedImagesAreListedOncePerContent) {
  ImageStore images(OciOptions{.dir = dir_.Sub("oci")});
  const std::string layer = image::Tar({{"bin/app", "app"}}, false);
  const std::string config = R"({"os":"linux","architecture":"amd64","config":{}})";
  const std::string archive = image::Tar(
      {{"cfg.json", config},
       {"layer.tar", layer},
       {"manifest.json",
        R"([{"Config":"cfg.json","RepoTags":["app:v1","127.0.0.1:5000/team/app:v1"],)"
        R"("Layers":["layer.tar"]}])"}},
      false);
  auto loaded = images.LoadArchive(image::WholeArchive(archive), "the archive");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_THAT((*loaded)[0].names,
              ::testing::ElementsAre("app:v1", "127.0.0.1:5000/team/app:v1"));
  EXPECT_EQ((*loaded)[0].size_bytes, static_cast<int64_t>(layer.size() + config.size()));
  EXPECT_TRUE(images.Present("docker.io/library/app:v1"));
  const auto listed = images.List();
  ASSERT_EQ(listed.size(), 1u);
  const std::string digest = (*loaded)[0].digest;
  std::vector<std::string> names = {listed[0].ref.String()};
  names.insert(names.end(), listed[0].aliases.begin(), listed[0].aliases.end());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre(
                         "127.0.0.1:5000/team/app:v1", "127.0.0.1:5000/team/app@" + digest,
                         "app:v1", "docker.io/library/app:v1",
                         "docker.io/library/app@" + digest));
  // Not an image archive: refused, nothing listed.
  auto refused = images.LoadArchive(
      []() -> absl::StatusOr<std::string_view> { return std::string_view(); }, "nothing");
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(images.List().size(), 1u);
}

// The node's archive (--image-archive) acts as a registry that holds its images: the node has
// none of them until a pull takes one from there (Always included, with no registry asked),
// and an image removed since is pulled from there again.
TEST_F(ImageStoreTest, ServedArchivesArePulledFromLikeARegistry) {
  const std::string archive = dir_.Sub("demo.tar");
  std::ofstream(archive, std::ios::binary) << image::ImageArchive({"busybox:latest"});
  // With a registry nobody answers at.
  ImageStore images(OciOptions{.dir = dir_.Sub("oci")});
  ASSERT_TRUE(images.ServeArchive(archive).ok());
  EXPECT_FALSE(images.Present("busybox"));
  EXPECT_TRUE(images.List().empty());
  auto pulled = images.Pull("busybox", /*always=*/true);
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_EQ(testing::ReadFile(pulled->root + "/bin/sh"), "#!static");
  EXPECT_TRUE(images.Present("docker.io/library/busybox:latest"));
  ASSERT_EQ(images.List().size(), 1u);
  EXPECT_GT(images.Remove(*images.DigestsOf({"busybox"}).begin(), {}).value_or(0), 0);
  EXPECT_FALSE(images.Present("busybox"));
  ASSERT_TRUE(images.Pull("busybox", false).ok());
  EXPECT_TRUE(images.Present("busybox"));
  EXPECT_FALSE(images.ServeArchive(dir_.Sub("missing.tar")).ok());
}

}  // namespace
}  // namespace mkube::agent::runtime
