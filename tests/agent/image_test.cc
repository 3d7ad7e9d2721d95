#include "agent/runtime/image.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace mkube::agent::runtime
