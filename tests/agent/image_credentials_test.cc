// Registry credentials as `docker login` writes them: the forms of config.json's entries, its
// errors, and the file read again when it changes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "agent/image/credentials.h"

namespace mkube::agent::image {
namespace {

TEST(DockerConfigTest, EntriesByRegistryHost) {
  // "user:pass" and "bob:s:e:c" in base64.
  auto got = ParseDockerConfig(R"({"auths": {
      "127.0.0.1:5000": {"auth": "dXNlcjpwYXNz"},
      "https://index.docker.io/v1/": {"auth": "Ym9iOnM6ZTpj"},
      "https://quay.io": {"username": "q", "password": "p"},
      "empty.example": {}
    }, "credsStore": "desktop"})");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ(got->at("127.0.0.1:5000").username, "user");
  EXPECT_EQ(got->at("127.0.0.1:5000").password, "pass");
  EXPECT_EQ(got->at("docker.io").password, "s:e:c");  // split at the first colon
  EXPECT_EQ(got->at("quay.io").username, "q");
  EXPECT_EQ(RegistryHostOf("http://registry-1.docker.io"), "docker.io");
  EXPECT_TRUE(ParseDockerConfig("{}")->empty());
}

TEST(DockerConfigTest, ErrorsNameWhatIsWrong) {
  EXPECT_EQ(ParseDockerConfig("[1]").status().message(), "not a JSON object");
  EXPECT_EQ(ParseDockerConfig(R"({"auths": []})").status().message(), "\"auths\" is not an object");
  EXPECT_EQ(ParseDockerConfig(R"({"auths": {"h": {"auth": "bm9jb2xvbg=="}}})").status().message(),
            "auths[\"h\"].auth is not base64 of \"user:password\"");
}

TEST(CredentialsFileTest, ReadAgainWhenItChanges) {
  char tmpl[] = "/tmp/mkube-credentials-test-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/config.json";
  CredentialsFile file(path);
  EXPECT_FALSE(file.For("127.0.0.1:5000"));  // no file yet
  std::ofstream(path) << R"({"auths": {"127.0.0.1:5000": {"auth": "dXNlcjpwYXNz"}}})";
  auto creds = file.For("127.0.0.1:5000");
  ASSERT_TRUE(creds);
  EXPECT_EQ(creds->username, "user");
  EXPECT_FALSE(file.For("127.0.0.1:5001"));
  // Rewritten (with a different modification time): the new entries only.
  std::ofstream(path) << R"({"auths": {"127.0.0.1:5001": {"username": "u", "password": "p"}}})";
  struct timespec times[2] = {{0, UTIME_NOW}, {1, 0}};
  utimensat(AT_FDCWD, path.c_str(), times, 0);
  EXPECT_FALSE(file.For("127.0.0.1:5000"));
  EXPECT_EQ(file.For("127.0.0.1:5001")->password, "p");
  // A file that cannot be read as config.json has none (the error is logged).
  std::ofstream(path) << "{broken";
  EXPECT_FALSE(file.For("127.0.0.1:5001"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mkube::agent::image
