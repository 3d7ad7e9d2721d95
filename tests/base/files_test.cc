#include "base/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/daemon.h"
#include "gtest/gtest.h"

namespace mkube {
namespace {

namespace fs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mkube-files-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  fs::path dir_;
};

TEST_F(FilesTest, WritesThenReplacesTheWholeFileAndLeavesNoTemporary) {
  const std::string path = (dir_ / "address").string();
  ASSERT_TRUE(WriteFileAtomically(path, "127.0.0.1:1\n").ok());
  EXPECT_EQ(Read(path), "127.0.0.1:1\n");
  ASSERT_TRUE(WriteFileAtomically(path, "x").ok());
  EXPECT_EQ(Read(path), "x");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(FilesTest, MakesTheFileWithTheModeAsked) {
  const std::string path = (dir_ / "config").string();
  ASSERT_TRUE(WriteFileAtomically(path, "token: t\n", 0600).ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(FilesTest, AFolderThatIsNotThereIsAnErrorNamingTheFile) {
  const std::string path = (dir_ / "missing" / "ready").string();
  absl::Status st = WriteFileAtomically(path, "ready\n");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(path + ".tmp"), std::string::npos) << st;
  EXPECT_NE(st.message().find("No such file"), std::string::npos) << st;
}

TEST_F(FilesTest, AReadyFileEndsWithANewlineAndAnEmptyPathWritesNothing) {
  const std::string path = (dir_ / "ready").string();
  ASSERT_TRUE(daemon::WriteReadyFile(path, "node01").ok());
  EXPECT_EQ(Read(path), "node01\n");
  EXPECT_TRUE(daemon::WriteReadyFile("", "node01").ok());
}

}  // namespace
}  // namespace mkube
