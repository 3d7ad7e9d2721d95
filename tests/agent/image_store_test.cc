// The node's content store: blobs kept by digest and checked before they land, layers
// unpacked once, and the manifests names stand for.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "agent/image/store.h"
#include "tests/agent/fake_registry.h"

namespace mkube::agent::image {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mkube-store-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Files under the store that are not blobs, layers or refs (leftovers of failed writes).
  int Leftovers() {
    int n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      n += e.path().filename().string().find('-') != std::string::npos;
    }
    return n;
  }
  std::string dir_;
};

TEST_F(StoreTest, ABlobLandsOnlyWhenItsBytesHashToItsDigest) {
  ContentStore store(dir_);
  const std::string bytes = "{\"config\":1}";
  const std::string digest = Sha256Of(bytes);
  ASSERT_TRUE(store.PutBlob(digest, bytes).ok());
  EXPECT_TRUE(store.HasBlob(digest));
  EXPECT_EQ(*store.ReadBlob(digest), bytes);

  // Corrupt, cut short, too long: refused, naming the blob and what was wrong; nothing lands.
  const std::string other = Sha256Of("something else");
  auto corrupt = store.PutBlob(other, bytes);
  EXPECT_EQ(corrupt.message(), "blob " + other + " is corrupt: its content hashes to " + digest);
  EXPECT_EQ(corrupt.code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(store.HasBlob(other));
  auto w = store.NewBlob(other, 100);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write("short").ok());
  EXPECT_EQ((*w)->Commit().message(), "blob " + other + " has 5 bytes, its manifest says 100");
  w->reset();
  auto longer = store.NewBlob(other, 2);
  EXPECT_EQ((*longer)->Write("three").message(),
            "blob " + other + " is larger than the 2 bytes its manifest says");
  longer->reset();
  // A blob dropped before Commit (a cut download) leaves nothing behind.
  auto dropped = store.NewBlob(other);
  ASSERT_TRUE((*dropped)->Write("part").ok());
  dropped->reset();
  EXPECT_EQ(Leftovers(), 0);
  EXPECT_FALSE(store.PutBlob("sha256:xyz", "a").ok());
  EXPECT_EQ(store.ReadBlob(other).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, ABlobChangedOnDiskIsNotReadAsItself) {
  ContentStore store(dir_);
  const std::string digest = Sha256Of("manifest");
  ASSERT_TRUE(store.PutBlob(digest, "manifest").ok());
  std::ofstream(store.BlobPath(digest)) << "tampered";
  EXPECT_EQ(store.ReadBlob(digest).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(StoreTest, ALayerIsUnpackedOnceUnderItsDigest) {
  ContentStore store(dir_);
  const std::string layer = TarGz({{"etc/motd", "hello"}});
  const std::string digest = Sha256Of(layer);
  EXPECT_EQ(store.Layer(digest, Whiteouts::kApply).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store.PutBlob(digest, layer).ok());
  auto dir = store.Layer(digest, Whiteouts::kApply);
  ASSERT_TRUE(dir.ok()) << dir.status();
  std::ifstream motd(*dir + "/etc/motd");
  std::string got;
  motd >> got;
  EXPECT_EQ(got, "hello");
  // Asked again, the folder is the same and not unpacked again (a file added there stays).
  std::ofstream(*dir + "/marker") << "x";
  EXPECT_EQ(*store.Layer(digest, Whiteouts::kApply), *dir);
  EXPECT_TRUE(fs::exists(*dir + "/marker"));
  // A blob that is not a layer: an error naming it, and no folder.
  const std::string junk = "not a tar";
  ASSERT_TRUE(store.PutBlob(Sha256Of(junk), junk).ok());
  auto bad = store.Layer(Sha256Of(junk), Whiteouts::kApply);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("layer " + Sha256Of(junk) + ": ", 0), 0u) << bad.status();
  EXPECT_EQ(Leftovers(), 0);
}

// An image's layers applied into one tree, in order: the upper layer's whiteout and changes
// win; made once under the manifest's digest; a missing layer leaves no tree.
TEST_F(StoreTest, AnImagesRootHoldsItsLayersApplied) {
  ContentStore store(dir_);
  const std::string lower = TarGz({{"etc/motd", "hello"}, {"bin/app", "v1"}, {"tmp/x", "x"}});
  const std::string upper = TarGz({{"etc/motd", "bye"}, {"tmp/.wh.x", ""}});
  ASSERT_TRUE(store.PutBlob(Sha256Of(lower), lower).ok());
  ASSERT_TRUE(store.PutBlob(Sha256Of(upper), upper).ok());
  const std::string manifest = Sha256Of("manifest");
  auto root = store.Root(manifest, {Sha256Of(lower), Sha256Of(upper)});
  ASSERT_TRUE(root.ok()) << root.status();
  std::ifstream motd(*root + "/etc/motd");
  std::string said;
  motd >> said;
  EXPECT_EQ(said, "bye");
  EXPECT_TRUE(fs::exists(*root + "/bin/app"));
  EXPECT_FALSE(fs::exists(*root + "/tmp/x"));
  std::ofstream(*root + "/marker") << "x";
  EXPECT_EQ(*store.Root(manifest, {}), *root);  // made once
  EXPECT_TRUE(fs::exists(*root + "/marker"));
  auto missing = store.Root(Sha256Of("other"), {Sha256Of(lower), Sha256Of("absent")});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(dir_ + "/roots/" + Sha256Of("other").substr(7)));
  EXPECT_EQ(Leftovers(), 0);
}

TEST_F(StoreTest, NamesStandForManifests) {
  ContentStore store(dir_);
  const std::string m1 = Sha256Of("m1"), m2 = Sha256Of("m2");
  auto tagged = ParseReference("127.0.0.1:5000/team/app:v1");
  auto pinned = ParseReference("127.0.0.1:5000/team/app@" + m2);
  EXPECT_FALSE(store.Ref(*tagged).has_value());
  ASSERT_TRUE(store.SetRef(*tagged, m1).ok());
  ASSERT_TRUE(store.SetRef(*pinned, m2).ok());
  EXPECT_EQ(store.Ref(*tagged), m1);
  EXPECT_EQ(store.Ref(*pinned), m2);
  ASSERT_TRUE(store.SetRef(*tagged, m2).ok());  // the tag moved
  EXPECT_EQ(store.Ref(*tagged), m2);
  EXPECT_FALSE(store.SetRef(*tagged, "latest").ok());
}

}  // namespace
}  // namespace mkube::agent::image
