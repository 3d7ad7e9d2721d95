// The image garbage collector against a real content store in a temporary folder, a fake disk
// and a fake clock: nothing happens below the high threshold; above it, unused images go least
// recently used first until the low threshold is reached, never one in use or younger than the
// minimum age; too little to free is said as the kubelet says it; a maximum age removes images
// whatever the disk; a layer two images share stays while either does.
#include "agent/runtime/image_gc.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "client/testing/fake_clock.h"
#include "tests/agent/fake_registry.h"
#include "tests/util/process.h"

namespace mkube::agent::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kCapacity = 1'000'000;

class ImageGcTest : public ::testing::Test {
 protected:
  // Loads a docker save archive of one image named `name` whose layer holds `content`.
  void Load(const std::string& name, const std::string& content) {
    const std::string config =
        R"({"os":"linux","architecture":"amd64","config":{"Cmd":[")" + name + R"("]}})";
    const std::string archive =
        image::Tar({{"cfg.json", config},
                    {"layer.tar", image::Tar({{"data", content}}, false)},
                    {"manifest.json", R"([{"Config":"cfg.json","RepoTags":[")" + name +
                                          R"("],"Layers":["layer.tar"]}])"}},
                   false);
    auto loaded = images_.LoadArchive(image::WholeArchive(archive), name);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
  }
  ImageGc Gc(ImageGcPolicy policy) {
    return ImageGc(
        &images_, [this] { return in_use_; },
        [this]() -> absl::StatusOr<DiskUsage> {
          return DiskUsage{kCapacity, available_};
        },
        &clock_, policy,
        [this](const std::string& reason, const std::string& message) {
          failures_.push_back(reason + ": " + message);
        });
  }

  testing::TempDir dir_;
  ImageStore images_{OciOptions{.dir = dir_.Sub("oci")}};
  client::testing::FakeClock clock_;
  std::vector<std::string> in_use_;
  int64_t available_ = kCapacity / 2;
  std::vector<std::string> failures_;
};

TEST_F(ImageGcTest, UnusedImagesGoLeastRecentlyUsedFirstDownToTheLowThreshold) {
  ImageGc gc = Gc({.high_threshold_percent = 80, .low_threshold_percent = 80});
  Load("old:v1", "old");
  ASSERT_TRUE(gc.Collect().ok());  // 50% used: nothing to do, the image is seen
  clock_.Advance(absl::Minutes(1));
  Load("newer:v1", "newer");
  Load("used:v1", "used");
  in_use_ = {"used:v1"};
  auto calm = gc.Collect();
  ASSERT_TRUE(calm.ok()) << calm.status();
  EXPECT_TRUE(calm->removed.empty());
  EXPECT_EQ(calm->wanted_bytes, 0);

  // 81% used: one byte over the low threshold's 200,000 free; the least recently used goes.
  clock_.Advance(absl::Minutes(3));
  available_ = 199'999;
  auto round = gc.Collect();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->wanted_bytes, 1);
  EXPECT_THAT(round->removed, ElementsAre("old:v1"));
  EXPECT_GT(round->freed_bytes, 0);
  EXPECT_FALSE(images_.Present("old:v1"));
  EXPECT_TRUE(images_.Present("newer:v1"));
  EXPECT_TRUE(images_.Present("used:v1"));
  EXPECT_TRUE(failures_.empty());
}

TEST_F(ImageGcTest, TooLittleToFreeIsSaidAsTheKubeletSaysIt) {
  ImageGc gc =
      Gc({.high_threshold_percent = 85, .low_threshold_percent = 80, .min_age = absl::Minutes(2)});
  Load("unused:v1", "unused");
  Load("used:v1", "used");
  in_use_ = {"docker.io/library/used:v1"};  // however the pod names it
  ASSERT_TRUE(gc.Collect().ok());
  clock_.Advance(absl::Minutes(3));
  Load("young:v1", "young");  // under the minimum age
  available_ = 10'000;        // 99% used: 190,000 bytes wanted
  auto round = gc.Collect();
  EXPECT_EQ(round.status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_EQ(failures_.size(), 1u);
  EXPECT_THAT(failures_[0], HasSubstr("FreeDiskSpaceFailed: Failed to garbage collect required "
                                      "amount of images. Attempted to free 190000 bytes, but "
                                      "only found "));
  EXPECT_FALSE(images_.Present("unused:v1"));
  EXPECT_TRUE(images_.Present("used:v1"));
  EXPECT_TRUE(images_.Present("young:v1"));
}

TEST_F(ImageGcTest, AMaximumAgeRemovesImagesWhateverTheDisk) {
  ImageGc gc = Gc({.high_threshold_percent = 100,
                   .low_threshold_percent = 80,
                   .min_age = absl::Minutes(2),
                   .max_age = absl::Minutes(10)});
  Load("stale:v1", "stale");
  Load("used:v1", "used");
  in_use_ = {"used:v1"};
  ASSERT_TRUE(gc.Collect().ok());
  clock_.Advance(absl::Minutes(11));
  auto round = gc.Collect();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_THAT(round->removed, ElementsAre("stale:v1"));
  EXPECT_TRUE(images_.Present("used:v1"));
}

TEST_F(ImageGcTest, ALayerTwoImagesShareStaysWhileEitherDoes) {
  Load("first:v1", "shared");
  Load("second:v1", "shared");  // the same layer, another config
  auto stored = images_.StoredImages();
  ASSERT_EQ(stored.size(), 2u);
  const std::string first = images_.DigestsOf({"first:v1"}).begin()->data();
  EXPECT_GT(images_.Remove(first, {}).value_or(0), 0);
  EXPECT_FALSE(images_.Present("first:v1"));
  ASSERT_TRUE(images_.Present("second:v1"));
  auto second = images_.Pull("second:v1", /*always=*/false);  // its layers are whole
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(testing::ReadFile(second->root + "/data"), "shared");
}

// A tag that moved (a newer app:v1 loaded) leaves the old content without a name; a container
// started from it still names it by digest, and no removal takes it while it does. Nor is an
// image removed that a container came to use after the collector looked.
TEST_F(ImageGcTest, WhatContainersUseStaysWhateverTheirNamesStandForNow) {
  Load("app:v1", "old");
  const std::string old_digest = *images_.DigestsOf({"app:v1"}).begin();
  auto old_image = images_.Pull("app:v1", /*always=*/false);
  ASSERT_TRUE(old_image.ok()) << old_image.status();
  Load("app:v1", "new");  // the tag moves
  Load("other:v1", "other");
  const std::string running = "docker.io/library/app@" + old_digest;
  auto in_use = [&] { return std::vector<std::string>{running}; };
  auto other = images_.Remove(*images_.DigestsOf({"other:v1"}).begin(), in_use);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(testing::ReadFile(old_image->root + "/data"), "old");  // its tree is still there
  EXPECT_EQ(images_.Remove(old_digest, in_use).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Once no container names it, the next removal sweeps it.
  auto swept = images_.Remove(*images_.DigestsOf({"app:v1"}).begin(), {});
  ASSERT_TRUE(swept.ok());
  EXPECT_FALSE(std::filesystem::exists(old_image->root));
}

}  // namespace
}  // namespace mkube::agent::runtime
