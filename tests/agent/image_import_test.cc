// Images loaded from archives: `docker save`'s form and an OCI image layout's, plain and gzip'd,
// then read from the store as a pulled image is; archives that are neither, or whose blobs are
// not what they are named, are refused.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "agent/image/archive_import.h"
#include "agent/image/puller.h"
#include "tests/agent/fake_registry.h"

namespace mkube::agent::image {
namespace {

namespace fs = std::filesystem;

class ImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mkube-import-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    store_ = std::make_unique<ContentStore>(dir_ + "/store");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << bytes;
    return dir_ + "/" + name;
  }
  // The image as a pull would leave it: its config and layers from the store.
  PulledImage Local(const std::string& name) {
    RegistryClient unused{RegistryOptions{}};
    auto img = Puller(store_.get(), &unused).Local(*ParseReference(name));
    EXPECT_TRUE(img.ok()) << img.status();
    return img.ok() ? *img : PulledImage{};
  }

  const std::string config_ =
      R"({"os":"linux","architecture":"amd64","config":{"Cmd":["/bin/app"]}})";
  const std::string layer_ = Tar({{"bin/app", "app"}}, false);
  std::string dir_;
  std::unique_ptr<ContentStore> store_;
};

TEST_F(ImportTest, ADockerSaveArchive) {
  const std::string manifest =
      R"([{"Config":"cfg.json","RepoTags":["team/app:v1","app:latest"],"Layers":["l1/layer.tar","l2/layer.tar"]}])";
  // The second layer entry links to the first, as docker save writes a layer two images share.
  const std::string file = Write("saved.tar", Tar({{"cfg.json", config_},
                                                   {"l1/layer.tar", layer_},
                                                   {"l2/layer.tar", "../l1/layer.tar", true},
                                                   {"manifest.json", manifest}},
                                                  false));
  auto got = ImportArchive(file, store_.get());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].names,
            (std::vector<std::string>{"docker.io/team/app:v1", "docker.io/library/app:latest"}));
  PulledImage img = Local("team/app:v1");
  EXPECT_EQ(img.config.cmd, std::vector<std::string>{"/bin/app"});
  ASSERT_EQ(img.layers.size(), 2u);
  EXPECT_EQ(img.layers[0], Sha256Of(layer_));
  EXPECT_EQ(Local("app").digest, img.digest);
  auto unpacked = store_->Layer(img.layers[0], Whiteouts::kApply);
  ASSERT_TRUE(unpacked.ok()) << unpacked.status();
  EXPECT_TRUE(fs::exists(*unpacked + "/bin/app"));
}

TEST_F(ImportTest, AnOciLayoutGzipped) {
  const std::string config = Sha256Of(config_), layer = Sha256Of(layer_);
  const std::string manifest =
      R"({"schemaVersion":2,"mediaType":")" + std::string(kOciManifest) +
      R"(","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")" + config +
      R"(","size":)" + std::to_string(config_.size()) +
      R"(},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":")" + layer +
      R"(","size":)" + std::to_string(layer_.size()) + "}]}";
  const std::string index =
      R"({"schemaVersion":2,"manifests":[{"mediaType":")" + std::string(kOciManifest) +
      R"(","digest":")" + Sha256Of(manifest) + R"(","size":)" + std::to_string(manifest.size()) +
      R"(,"annotations":{"org.opencontainers.image.ref.name":"127.0.0.1:5000/tools:v2"}}]})";
  auto blob = [](const std::string& d) { return "blobs/sha256/" + d.substr(7); };
  const std::string file =
      Write("layout.tar.gz", Tar({{"oci-layout", R"({"imageLayoutVersion":"1.0.0"})"},
                                  {"index.json", index},
                                  {blob(Sha256Of(manifest)), manifest},
                                  {blob(config), config_},
                                  {blob(layer), layer_}},
                                 true));
  auto got = ImportArchive(file, store_.get());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].names, std::vector<std::string>{"127.0.0.1:5000/tools:v2"});
  EXPECT_EQ(Local("127.0.0.1:5000/tools:v2").layers, std::vector<std::string>{layer});
}

TEST_F(ImportTest, WhatIsNotAnImageArchiveIsRefused) {
  auto neither = ImportArchive(Write("other.tar", Tar({{"readme", "hi"}}, false)), store_.get());
  EXPECT_NE(
      neither.status().message().find("is neither a docker save archive nor an OCI image layout"),
      std::string::npos)
      << neither.status();
  // A blob whose bytes are not what its name says.
  const std::string named = "blobs/sha256/" + std::string(64, 'a');
  auto corrupt = ImportArchive(Write("bad.tar", Tar({{"index.json", "{}"}, {named, "x"}}, false)),
                               store_.get());
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(corrupt.status().message().find("\"" + named + "\" in the archive: blob sha256:aaaa"),
            std::string::npos)
      << corrupt.status();
  auto garbage = ImportArchive(Write("garbage", "not an archive"), store_.get());
  EXPECT_FALSE(garbage.ok());
}

// An archive arriving in pieces (as `mkubectl image load` streams it): pieces of any size make
// the same import, and a source that fails ends it with the source's error.
TEST_F(ImportTest, AStreamedArchive) {
  const std::string archive = Tar({{"cfg.json", config_},
                                   {"layer.tar", layer_},
                                   {"manifest.json",
                                    R"([{"Config":"cfg.json","RepoTags":["streamed:v1"],)"
                                    R"("Layers":["layer.tar"]}])"}},
                                  true);
  size_t offset = 0;
  auto pieces = [&]() -> absl::StatusOr<std::string_view> {
    const std::string_view piece = std::string_view(archive).substr(offset, 7);
    offset += piece.size();
    return piece;
  };
  auto got = ImportArchive(pieces, "the stream", store_.get());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(Local("streamed:v1").layers, std::vector<std::string>{Sha256Of(layer_)});

  offset = 0;
  auto cut = [&]() -> absl::StatusOr<std::string_view> {
    if (offset > archive.size() / 2) return absl::CancelledError("the caller went away");
    const std::string_view piece = std::string_view(archive).substr(offset, 512);
    offset += piece.size();
    return piece;
  };
  auto failed = ImportArchive(cut, "the stream", store_.get());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kCancelled) << failed.status();
  EXPECT_EQ(failed.status().message(), "the caller went away");
}

}  // namespace
}  // namespace mkube::agent::image
