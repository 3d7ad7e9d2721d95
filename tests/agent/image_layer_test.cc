// Image layers unpacked with their whiteouts, from gzip'd tar archives written here.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/image/layer.h"
#include "agent/image/layer_view.h"

namespace mkube::agent::image {
namespace {

namespace fs = std::filesystem;

struct Item {
  enum Type { kFile, kDir, kSymlink, kHardlink } type = kFile;
  std::string path;
  std::string content;  // a file's bytes, or a link's target
};

// A gzip'd tar archive of `items`, in their order.
void WriteLayer(const std::string& file, const std::vector<Item>& items) {
  archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  archive_write_open_filename(a, file.c_str());
  for (const auto& it : items) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, it.path.c_str());
    archive_entry_set_mtime(e, 1700000000, 0);
    switch (it.type) {
      case Item::kFile:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, static_cast<la_int64_t>(it.content.size()));
        break;
      case Item::kDir:
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
        break;
      case Item::kSymlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_perm(e, 0777);
        archive_entry_set_symlink(e, it.content.c_str());
        break;
      case Item::kHardlink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_hardlink(e, it.content.c_str());
        break;
    }
    archive_write_header(a, e);
    if (it.type == Item::kFile) archive_write_data(a, it.content.data(), it.content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class LayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mkube-layer-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Layer(const std::string& name, const std::vector<Item>& items) {
    const std::string file = dir_ + "/" + name + ".tar.gz";
    WriteLayer(file, items);
    return file;
  }
  std::string dir_;
};

// Two layers unpacked over each other: the upper one's whiteout removes a file, its opaque
// folder hides what the lower one put there (but keeps its own entries, before and after the
// marker), and links come out as links.
TEST_F(LayerTest, AnUpperLayerDeletesAndHidesWhatTheLowerHad) {
  const std::string root = dir_ + "/root";
  auto lower = UnpackLayer(Layer("lower", {{Item::kDir, "a/"},
                                           {Item::kFile, "a/x", "one"},
                                           {Item::kFile, "a/y", "two"},
                                           {Item::kFile, "./keep/k", "kept"},
                                           {Item::kFile, "gone", "soon"},
                                           {Item::kSymlink, "l", "a/x"},
                                           {Item::kHardlink, "h", "a/x"}}),
                           root, Whiteouts::kApply);
  ASSERT_TRUE(lower.ok()) << lower.status();
  EXPECT_EQ(lower->bytes, 3 + 3 + 4 + 4);
  EXPECT_EQ(Read(root + "/h"), "one");
  EXPECT_EQ(fs::read_symlink(root + "/l"), "a/x");
  auto upper = UnpackLayer(Layer("upper", {{Item::kFile, "a/w", "before"},
                                           {Item::kFile, "a/.wh..wh..opq"},
                                           {Item::kFile, "a/z", "after"},
                                           {Item::kFile, ".wh.gone"},
                                           {Item::kFile, "keep/.wh.nothing"},
                                           {Item::kFile, "new", "fresh"}}),
                           root, Whiteouts::kApply);
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(upper->whiteouts, 3);
  std::vector<std::string> in_a;
  for (const auto& e : fs::directory_iterator(root + "/a")) in_a.push_back(e.path().filename());
  std::sort(in_a.begin(), in_a.end());
  EXPECT_EQ(in_a, (std::vector<std::string>{"w", "z"}));
  EXPECT_FALSE(fs::exists(root + "/gone"));
  EXPECT_EQ(Read(root + "/keep/k"), "kept");
  EXPECT_EQ(Read(root + "/new"), "fresh");
  EXPECT_EQ(Read(root + "/h"), "one");  // a hard link outlives the name it was made from
}

// Entries that would land outside the folder are refused with their names, and nothing is
// written outside it.
TEST_F(LayerTest, EntriesOutsideTheFolderAreRefused) {
  struct Case {
    std::vector<Item> items;
    std::string why;
  };
  for (const Case& c : std::vector<Case>{
           {{{Item::kFile, "../escaped", "x"}}, "\"../escaped\" would land outside the image"},
           {{{Item::kFile, "/escaped", "x"}}, "\"/escaped\" would land outside the image"},
           {{{Item::kHardlink, "h", "../../escaped"}}, "hard link \"h\" points outside the image"},
           {{{Item::kFile, ".wh...", ""}}, "whiteout of \"..\" is not a name"},
       }) {
    const std::string root = dir_ + "/root";
    fs::remove_all(root);
    auto got = UnpackLayer(Layer("bad", c.items), root, Whiteouts::kApply);
    ASSERT_FALSE(got.ok()) << c.why;
    EXPECT_NE(got.status().message().find(c.why), std::string::npos) << got.status();
    EXPECT_FALSE(fs::exists(dir_ + "/escaped")) << c.why;
  }
}

// Symbolic links on an entry's way are followed inside the image: /lib -> usr/lib gets the
// files of a later layer's lib/ (and its whiteouts), and links to absolute paths or far up
// stay in the image.
TEST_F(LayerTest, SymbolicLinksAreFollowedInsideTheImage) {
  const std::string root = dir_ + "/root";
  ASSERT_TRUE(UnpackLayer(Layer("lower", {{Item::kDir, "usr/lib/"},
                                          {Item::kFile, "usr/lib/a", "a"},
                                          {Item::kSymlink, "lib", "usr/lib"},
                                          {Item::kSymlink, "abs", dir_},
                                          {Item::kSymlink, "up", "../../.."}}),
                          root, Whiteouts::kApply)
                  .ok());
  auto upper = UnpackLayer(Layer("upper", {{Item::kFile, "lib/x/foo", "foo"},
                                           {Item::kFile, "lib/.wh.a"},
                                           {Item::kFile, "abs/escaped", "e"},
                                           {Item::kFile, "up/escaped2", "e2"}}),
                           root, Whiteouts::kApply);
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(Read(root + "/usr/lib/x/foo"), "foo");
  EXPECT_TRUE(fs::is_symlink(root + "/lib"));
  EXPECT_FALSE(fs::exists(root + "/usr/lib/a"));
  EXPECT_EQ(Read(root + dir_ + "/escaped"), "e");
  EXPECT_EQ(Read(root + "/escaped2"), "e2");
  EXPECT_FALSE(fs::exists(dir_ + "/escaped"));
  EXPECT_FALSE(fs::exists(dir_ + "/escaped2"));
}

TEST_F(LayerTest, WhatIsNotATarArchiveIsAnError) {
  std::ofstream(dir_ + "/junk") << "not an archive at all";
  auto got = UnpackLayer(dir_ + "/junk", dir_ + "/root", Whiteouts::kApply);
  ASSERT_FALSE(got.ok());
  auto missing = UnpackLayer(dir_ + "/absent", dir_ + "/root", Whiteouts::kApply);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read the layer"), std::string::npos);
}

// As an overlay's lower layer: a deleted name is a 0:0 character device, a hidden folder is
// marked opaque. Only root can make those.
TEST_F(LayerTest, OverlayWhiteoutsAreDevicesAndOpaqueMarks) {
  if (geteuid() != 0) GTEST_SKIP() << "overlay whiteouts need root";
  const std::string root = dir_ + "/layer";
  auto got = UnpackLayer(Layer("l", {{Item::kFile, ".wh.gone"},
                                     {Item::kFile, "d/.wh..wh..opq"},
                                     {Item::kFile, "d/kept", "k"}}),
                         root, Whiteouts::kOverlay);
  ASSERT_TRUE(got.ok()) << got.status();
  struct stat st {};
  ASSERT_EQ(lstat((root + "/gone").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(0, 0));
  char value[4] = {};
  EXPECT_EQ(getxattr((root + "/d").c_str(), "trusted.overlay.opaque", value, sizeof value), 1);
  EXPECT_EQ(value[0], 'y');
  EXPECT_EQ(Read(root + "/d/kept"), "k");
}

// Layers kept apart and read as overlayfs stacks them show the same tree as the same layers
// applied into one folder: the same names in each folder, the same bytes in each file.
TEST_F(LayerTest, StackedLayersReadAsTheAppliedTree) {
  if (geteuid() != 0) GTEST_SKIP() << "overlay whiteouts need root";
  const std::vector<std::vector<Item>> layers = {
      {{Item::kDir, "usr/bin/"},
       {Item::kFile, "usr/bin/env", "env"},
       {Item::kSymlink, "bin", "usr/bin"},
       {Item::kFile, "etc/passwd", "root:x:0:0::/:/bin/sh"},
       {Item::kFile, "etc/old", "old"},
       {Item::kFile, "opt/app/a", "a1"},
       {Item::kFile, "opt/app/b", "b1"},
       {Item::kFile, "data/d", "d"},
       {Item::kSymlink, "loop", "loop2"},
       {Item::kSymlink, "loop2", "/loop"}},
      {{Item::kFile, "usr/bin/sh", "sh"},
       {Item::kFile, "etc/.wh.old"},
       {Item::kFile, "opt/app/.wh..wh..opq"},
       {Item::kFile, "opt/app/c", "c2"},
       {Item::kSymlink, "etc/users", "/etc/passwd"},
       {Item::kFile, ".wh.data"}},
      {{Item::kFile, "opt/app/b", "b3"}, {Item::kFile, "data/new", "n"}},
  };
  const std::string applied = dir_ + "/applied";
  std::vector<std::string> stacked;  // the topmost first
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string blob = Layer("l" + std::to_string(i), layers[i]);
    ASSERT_TRUE(UnpackLayer(blob, applied, Whiteouts::kApply).ok());
    const std::string own = dir_ + "/layer" + std::to_string(i);
    ASSERT_TRUE(UnpackLayer(blob, own, Whiteouts::kOverlay).ok());
    stacked.insert(stacked.begin(), own);
  }
  const LayerView view(stacked), one({applied});
  for (const char* folder : {"", "/", "usr/bin", "/bin", "etc", "opt/app", "data", "absent"}) {
    EXPECT_EQ(view.List(folder), one.List(folder)) << folder;
  }
  EXPECT_EQ(view.List("opt/app"), (std::set<std::string>{"b", "c"}));
  EXPECT_EQ(view.List("data"), std::set<std::string>{"new"});
  for (const char* path : {"/bin/sh", "bin/env", "/etc/passwd", "etc/users", "opt/app/b",
                           "opt/app/c", "data/new", "/usr/bin/../bin/sh", "/../../etc/passwd"}) {
    auto got = view.Find(path);
    ASSERT_TRUE(got.has_value()) << path;
    auto want = one.Find(path);
    ASSERT_TRUE(want.has_value()) << path;
    EXPECT_EQ(Read(*got), Read(*want)) << path;
  }
  EXPECT_EQ(Read(*view.Find("opt/app/b")), "b3");
  EXPECT_EQ(*view.Find("/bin/sh"), stacked[1] + "/usr/bin/sh");
  for (const char* gone : {"etc/old", "opt/app/a", "data/d", "loop", "missing", "bin/missing",
                           "etc/passwd/x"}) {
    EXPECT_FALSE(view.Find(gone).has_value()) << gone;
    EXPECT_FALSE(one.Find(gone).has_value()) << gone;
  }
  // Not following the last link: the link itself.
  ASSERT_TRUE(view.Find("bin", false).has_value());
  EXPECT_EQ(*view.Find("bin", false), stacked[2] + "/bin");
}

}  // namespace
}  // namespace mkube::agent::image
