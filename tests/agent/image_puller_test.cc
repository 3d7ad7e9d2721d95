// Pulls into the content store from a registry of the test's own: through an index to the
// node's platform, each blob fetched once, a corrupt layer fetched again then refused, and
// pulls of one image at the same time sharing one download.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "agent/image/puller.h"
#include "tests/agent/fake_registry.h"

namespace mkube::agent::image {
namespace {

namespace fs = std::filesystem;

class PullerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mkube-puller-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    store_ = std::make_unique<ContentStore>(dir_);
    RegistryOptions o;
    o.insecure.insert(registry_.host());
    client_ = std::make_unique<RegistryClient>(o);
    puller_ = std::make_unique<Puller>(store_.get(), client_.get());
    // An image of two layers, the upper one changing a file, behind an index of two platforms.
    auto add = [&](const std::string& bytes) {
      const std::string d = registry_.AddBlob(bytes);
      blob_sizes_[d] = bytes.size();
      return d;
    };
    layers_ = {add(TarGz({{"bin/app", "v1"}, {"etc/motd", "hello"}})),
               add(TarGz({{"etc/motd", "bye"}}))};
    const std::string config = R"({"architecture":"amd64","os":"linux",
        "config":{"Cmd":["/bin/app"],"Env":["A=b"],"WorkingDir":"/srv"},
        "rootfs":{"type":"layers","diff_ids":[]}})";
    config_ = add(config);
    std::string manifest =
        R"({"schemaVersion":2,"mediaType":")" + std::string(kOciManifest) +
        R"(","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")" +
        config_ + R"(","size":)" + std::to_string(config.size()) + R"(},"layers":[)";
    for (size_t i = 0; i < layers_.size(); ++i) {
      manifest +=
          (i ? "," : "") +
          std::string(R"({"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":")") +
          layers_[i] + R"(","size":)" + std::to_string(Size(layers_[i])) + "}";
    }
    manifest += "]}";
    manifest_ = registry_.AddManifest("team/app", "amd64-only", manifest);
    const std::string index =
        R"({"schemaVersion":2,"mediaType":")" + std::string(kOciIndex) + R"(","manifests":[
        {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" +
        Sha256Of("arm") + R"(","size":1,"platform":{"os":"linux","architecture":"arm64"}},
        {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" +
        manifest_ + R"(","size":)" + std::to_string(manifest.size()) +
        R"(,"platform":{"os":"linux","architecture":"amd64"}}]})";
    index_ = registry_.AddManifest("team/app", "v1", index, std::string(kOciIndex));
  }
  void TearDown() override { fs::remove_all(dir_); }
  int64_t Size(const std::string& digest) {
    return static_cast<int64_t>(blob_sizes_.count(digest) ? blob_sizes_[digest] : 0);
  }
  Reference Ref(const std::string& tag) {
    return *ParseReference(registry_.host() + "/team/app:" + tag);
  }

  FakeRegistry registry_{FakeRegistry::Auth::kNone};
  std::map<std::string, size_t> blob_sizes_;
  std::string dir_;
  std::unique_ptr<ContentStore> store_;
  std::unique_ptr<RegistryClient> client_;
  std::unique_ptr<Puller> puller_;
  std::vector<std::string> layers_;
  std::string config_, manifest_, index_;
};

TEST_F(PullerTest, ThroughAnIndexToThePlatformsManifestEachBlobOnce) {
  auto img = puller_->Pull(Ref("v1"));
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_EQ(img->digest, index_);
  EXPECT_EQ(img->manifest_digest, manifest_);
  EXPECT_EQ(img->layers, layers_);
  EXPECT_EQ(img->config.cmd, std::vector<std::string>{"/bin/app"});
  EXPECT_EQ(img->config.working_dir, "/srv");
  EXPECT_EQ(registry_.blob_requests.load(), 3);  // the config and two layers
  // The layers unpack, the upper one over the lower.
  const std::string root = dir_ + "/root";
  for (const auto& l : img->layers) {
    ASSERT_TRUE(UnpackLayer(store_->BlobPath(l), root, Whiteouts::kApply).ok());
  }
  std::ifstream motd(root + "/etc/motd");
  std::string said;
  motd >> said;
  EXPECT_EQ(said, "bye");
  // Pulled again: the manifests are asked for, no blob is fetched again.
  ASSERT_TRUE(puller_->Pull(Ref("v1")).ok());
  EXPECT_EQ(registry_.blob_requests.load(), 3);
  // And the node has it without the registry.
  auto local = puller_->Local(Ref("v1"));
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->layers, layers_);
  EXPECT_EQ(puller_->Local(Ref("v2")).status().code(), absl::StatusCode::kNotFound);
  // By the manifest's own digest (no index on the way).
  auto pinned = puller_->Pull(*ParseReference(registry_.host() + "/team/app@" + manifest_));
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(pinned->manifest_digest, manifest_);
}

TEST_F(PullerTest, ACorruptLayerIsFetchedAgainThenRefused) {
  registry_.corrupt[layers_[1]] = "not the layer";
  auto img = puller_->Pull(Ref("v1"));
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(img.status().message().find("blob " + layers_[1] + " "), std::string::npos)
      << img.status();
  EXPECT_EQ(registry_.blob_requests.load(),
            2 + 2);  // the config, the first layer, the second twice
  EXPECT_FALSE(store_->HasBlob(layers_[1]));
  EXPECT_EQ(puller_->Local(Ref("v1")).status().code(), absl::StatusCode::kNotFound);
  registry_.corrupt.clear();
  ASSERT_TRUE(puller_->Pull(Ref("v1")).ok());
  EXPECT_EQ(registry_.blob_requests.load(), 4 + 1);  // only what was missing
}

TEST_F(PullerTest, PullsOfOneImageAtOnceShareOneDownload) {
  registry_.blob_delay = std::chrono::milliseconds(50);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { ok += puller_->Pull(Ref("v1")).ok(); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(registry_.blob_requests.load(), 3);
}

TEST_F(PullerTest, AnIndexWithoutThisPlatformSaysWhichItHas) {
  Puller arm(store_.get(), client_.get(), "linux", "riscv64");
  auto img = arm.Pull(Ref("v1"));
  EXPECT_EQ(img.status().message(),
            "the image has no manifest for linux/riscv64 (it has: linux/arm64, linux/amd64)");
}

}  // namespace
}  // namespace mkube::agent::image
