// Images made from files on this machine: a spec's variables, files (with the libraries a
// program loads), links and busybox applets, written as an OCI image layout that the node's
// import reads back whole; the same files make the same digests; bad specs name their fault.
#include "agent/image/image_build.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/image/archive_import.h"
#include "agent/image/puller.h"
#include "tests/util/process.h"

namespace mkube::agent::image {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ImageBuildTest : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(dir_.Sub("hello.txt")) << "hello\n"; }
  // The image `name` of the layout at `file`, imported and applied into one tree.
  std::string Imported(const std::string& file, const std::string& name) {
    ContentStore store(dir_.Sub("store"));
    EXPECT_TRUE(ImportArchive(file, &store).ok());
    RegistryClient unused{RegistryOptions{}};
    auto img = Puller(&store, &unused).Local(*ParseReference(name));
    EXPECT_TRUE(img.ok()) << img.status();
    if (!img.ok()) return "";
    auto root = store.Root(img->manifest_digest, img->layers);
    EXPECT_TRUE(root.ok()) << root.status();
    return root.ok() ? *root : "";
  }
  testing::TempDir dir_;
};

TEST_F(ImageBuildTest, FilesLibrariesAndLinksMakeAnImageTheNodeReads) {
  auto specs = ParseImageSpecs(R"([{
      "name": "made:v1",
      "files": [{"from": "${DIR}/hello.txt", "to": "/srv/hello.txt"},
                {"from": "/bin/true", "to": "/bin/true", "libraries": true}],
      "links": {"/bin/yes-really": "/bin/true"},
      "config": {"Entrypoint": ["/bin/true"], "ExposedPorts": {"80/tcp": {}}}}])",
                               {{"DIR", dir_.path()}});
  ASSERT_TRUE(specs.ok()) << specs.status();
  const std::string out = dir_.Sub("made.tar");
  auto built = WriteImageLayout(*specs, out);
  ASSERT_TRUE(built.ok()) << built.status();
  ASSERT_EQ(built->size(), 1u);
  EXPECT_GE((*built)[0].files, 3);  // the text, true, and at least the loader and libc
  const std::string root = Imported(out, "made:v1");
  EXPECT_EQ(testing::ReadFile(root + "/srv/hello.txt"), "hello\n");
  EXPECT_EQ(fs::read_symlink(root + "/bin/yes-really"), "/bin/true");
  EXPECT_EQ(access((root + "/bin/true").c_str(), X_OK), 0);
  EXPECT_TRUE(fs::exists(root + "/lib64/ld-linux-x86-64.so.2")) << "the dynamic loader";
  // The same files make the same image.
  auto again = WriteImageLayout(*specs, dir_.Sub("again.tar"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].digest, (*built)[0].digest);
}

TEST_F(ImageBuildTest, ABusyboxGetsALinkPerApplet) {
  if (!fs::exists("/bin/busybox")) GTEST_SKIP() << "no /bin/busybox (busybox-static)";
  auto specs = ParseImageSpecs(R"([{"name": "bb:v1",
      "files": [{"from": "/bin/busybox", "to": "/bin/busybox", "libraries": true}],
      "busybox": "/bin/busybox"}])",
                               {});
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_TRUE(WriteImageLayout(*specs, dir_.Sub("bb.tar")).ok());
  const std::string root = Imported(dir_.Sub("bb.tar"), "bb:v1");
  EXPECT_EQ(fs::read_symlink(root + "/bin/sh"), "/bin/busybox");
  EXPECT_EQ(fs::read_symlink(root + "/bin/sleep"), "/bin/busybox");
}

TEST_F(ImageBuildTest, BadSpecsNameTheirFault) {
  EXPECT_THAT(std::string(ParseImageSpecs("{}", {}).status().message()),
              HasSubstr("not a JSON list"));
  EXPECT_THAT(std::string(ParseImageSpecs(R"([{"files": []}])", {}).status().message()),
              HasSubstr("has no \"name\""));
  EXPECT_THAT(std::string(ParseImageSpecs(R"([{"name": "x:v1", "files": [{"from": "${NOPE}",
                  "to": "/x"}]}])",
                                          {})
                              .status()
                              .message()),
              HasSubstr("names ${NOPE}, which is not set"));
  auto missing =
      ParseImageSpecs(R"([{"name": "x:v1", "files": [{"from": "/no/such", "to": "/x"}]}])", {});
  ASSERT_TRUE(missing.ok());
  EXPECT_THAT(std::string(WriteImageLayout(*missing, dir_.Sub("x.tar")).status().message()),
              HasSubstr("cannot read /no/such"));
  EXPECT_FALSE(fs::exists(dir_.Sub("x.tar")));
}

}  // namespace
}  // namespace mkube::agent::image
