#include "agent/runtime/image.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/agent/fake_registry.h"
#include "tests/util/process.h"

namespace mkube::agent::runtime {
namespace {

TEST(ParseImageRef, NamesAsKubernetesNormalizesThem) {
  struct Case {
    std::string image, name, tag;
  } cases[] = {
      {"nginx", "nginx", "latest"},
      {"nginx:1.19", "nginx", "1.19"},
      {"library/nginx", "nginx", "latest"},
      {"docker.io/library/nginx:latest", "nginx", "latest"},
      {"soscscs/myapp:v1", "soscscs/myapp", "v1"},
      {"localhost:5000/team/app", "localhost:5000/team/app", "latest"},
      {"localhost:5000/team/app:v2", "localhost:5000/team/app", "v2"},
  };
  for (const auto& c : cases) {
    auto ref = ParseImageRef(c.image);
    ASSERT_TRUE(ref.ok()) << c.image << ": " << ref.status();
    EXPECT_EQ(ref->name, c.name) << c.image;
    EXPECT_EQ(ref->tag, c.tag) << c.image;
  }
}

TEST(ParseImageRef, RefusesWhatIsNotARegistryPath) {
  for (const std::string bad : {"", "nginx:", "../etc", "a/../../b", "/abs/path", "x/./y",
                                "nginx@sha256:abcd", "a//b"}) {
    auto ref = ParseImageRef(bad);
    EXPECT_FALSE(ref.ok()) << bad << " -> " << (ref.ok() ? ref->String() : "");
  }
}

class ImageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(registry() + "/soscscs/myapp/v1/bin");
    std::ofstream(registry() + "/soscscs/myapp/v1/image.json")
        << R"({"entrypoint": ["myapp"], "cmd": ["--port", "80"], "env": ["VERSION=v1"]})";
    std::ofstream(registry() + "/soscscs/myapp/v1/bin/myapp") << "#!/bin/sh\n";
    std::filesystem::create_directories(registry() + "/broken/latest");
    std::ofstream(registry() + "/broken/latest/image.json") << R"({"entrypoint": "not a list"})";
  }
  std::string registry() const { return dir_.Sub("registry"); }
  std::string store() const { return dir_.Sub("store"); }
  testing::TempDir dir_;
};

TEST_F(ImageStoreTest, PullCopiesTheImageAndReadsItsConfig) {
  ImageStore images(registry(), store());
  EXPECT_FALSE(images.Present("soscscs/myapp:v1"));
  auto img = images.Pull("soscscs/myapp:v1", /*always=*/false);
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_EQ(img->root, store() + "/soscscs/myapp/v1");
  EXPECT_TRUE(std::filesystem::exists(img->root + "/bin/myapp"));
  EXPECT_EQ(img->config.entrypoint, std::vector<std::string>{"myapp"});
  EXPECT_EQ(img->config.cmd, (std::vector<std::string>{"--port", "80"}));
  EXPECT_EQ(img->config.env, std::vector<std::string>{"VERSION=v1"});
  EXPECT_GT(img->size_bytes, 0);
  EXPECT_TRUE(images.Present("soscscs/myapp:v1"));
  // Pulled again unchanged: nothing is copied (a file added to the node's copy stays).
  std::ofstream(img->root + "/node-only") << "x";
  ASSERT_TRUE(images.Pull("soscscs/myapp:v1", /*always=*/true).ok());
  EXPECT_TRUE(std::filesystem::exists(img->root + "/node-only"));
  // Changed in the registry: copied anew.
  std::ofstream(registry() + "/soscscs/myapp/v1/bin/myapp", std::ios::app) << "echo v1.1\n";
  ASSERT_TRUE(images.Pull("soscscs/myapp:v1", /*always=*/true).ok());
  EXPECT_FALSE(std::filesystem::exists(img->root + "/node-only"));
  EXPECT_EQ(testing::ReadFile(img->root + "/bin/myapp"), "#!/bin/sh\necho v1.1\n");
  // The node keeps its copy while the registry changes, until pulled again.
  std::filesystem::remove_all(registry() + "/soscscs");
  EXPECT_TRUE(images.Pull("soscscs/myapp:v1", false).ok());
  EXPECT_EQ(images.Pull("soscscs/myapp:v1", /*always=*/true).status().code(),
            absl::StatusCode::kNotFound);
  auto list = images.List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].ref.String(), "soscscs/myapp:v1");
}

TEST_F(ImageStoreTest, MissingAndBrokenImagesAreErrors) {
  ImageStore images(registry(), store());
  auto missing = images.Pull("nosuch:v9", false);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "image \"nosuch:v9\" not found in the registry");
  auto broken = images.Pull("broken", false);
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(broken.status().message()), ::testing::HasSubstr("entrypoint: must be a list of strings"));
  ImageStore no_registry("", store());
  EXPECT_EQ(no_registry.Pull("busybox", false).status().code(), absl::StatusCode::kNotFound);
}

// An image not in the registry folder is an OCI image: pulled from its registry into the
// content store and run from its layers applied into one tree, its own system folders and all.
TEST_F(ImageStoreTest, OtherImagesArePulledFromTheirRegistry) {
  image::FakeRegistry remote(image::FakeRegistry::Auth::kNone);
  const std::string layer =
      image::TarGz({{"bin/sh", "#!static"}, {"etc/passwd", "app:x:10:10::/:/bin/sh\n"}});
  const std::string config =
      R"({"os":"linux","architecture":"amd64","config":{"Entrypoint":["/bin/sh"],"Cmd":["-c","true"],)"
      R"("Env":["PATH=/bin"],"User":"app","WorkingDir":"/srv"}})";
  const std::string layer_digest = remote.AddBlob(layer), config_digest = remote.AddBlob(config);
  remote.AddManifest("tools", "v1",
                       R"({"schemaVersion":2,"config":{"digest":")" + config_digest + R"(","size":)" +
                           std::to_string(config.size()) + R"(},"layers":[{"digest":")" + layer_digest +
                           R"(","size":)" + std::to_string(layer.size()) + "}]}");
  OciOptions oci{.dir = dir_.Sub("oci")};
  oci.registry.insecure.insert(remote.host());
  ImageStore images(registry(), store(), oci);
  const std::string name = remote.host() + "/tools:v1";
  EXPECT_FALSE(images.Present(name));
  auto img = images.Pull(name, /*always=*/false);
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_TRUE(img->own_root);
  EXPECT_EQ(testing::ReadFile(img->root + "/bin/sh"), "#!static");
  EXPECT_EQ(img->config.entrypoint, std::vector<std::string>{"/bin/sh"});
  EXPECT_EQ(img->config.user, "app");
  EXPECT_EQ(img->config.working_dir, "/srv");
  EXPECT_EQ(img->ref.String(), name);
  EXPECT_THAT(img->id, ::testing::StartsWith(remote.host() + "/tools@sha256:"));
  EXPECT_EQ(img->size_bytes, static_cast<int64_t>(layer.size() + config.size()));
  EXPECT_TRUE(images.Present(name));
  // IfNotPresent: the node's copy, without asking the registry.
  const int asked = remote.blob_requests.load();
  ASSERT_TRUE(images.Pull(name, false).ok());
  EXPECT_EQ(remote.blob_requests.load(), asked);
  // The folder's images are the folder's still; the node lists both.
  ASSERT_TRUE(images.Pull("soscscs/myapp:v1", false).ok());
  std::vector<std::string> listed;
  for (const auto& i : images.List()) listed.push_back(i.ref.String());
  EXPECT_THAT(listed, ::testing::UnorderedElementsAre("soscscs/myapp:v1", name));
  auto absent = images.Pull(remote.host() + "/tools:v2", false);
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(absent.status().message()), ::testing::HasSubstr("MANIFEST_UNKNOWN"));
}

// Images loaded from an archive: every tag of one content is one image of the node, listed
// with its other names (its full names and its digest form) for the node's status.
TEST_F(ImageStoreTest, LoadedImagesAreListedOncePerContent) {
  ImageStore images(registry(), store(), OciOptions{.dir = dir_.Sub("oci")});
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
  std::ofstream(archive, std::ios::binary) << image::Tar(
      {{"cfg.json", R"({"os":"linux","architecture":"amd64","config":{"Cmd":["sh"]}})"},
       {"layer.tar", image::Tar({{"bin/sh", "#!static"}}, false)},
       {"manifest.json",
        R"([{"Config":"cfg.json","RepoTags":["busybox:latest"],"Layers":["layer.tar"]}])"}},
      false);
  // Without a folder registry, with a registry nobody answers at.
  OciOptions oci{.dir = dir_.Sub("oci")};
  ImageStore images("", store(), oci);
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
