#pragma once

#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

// A node's registry credentials, in the form `docker login` writes (~/.docker/config.json) and
// the kubelet reads from its root folder:
//   {"auths": {"HOST[:PORT]": {"auth": base64("user:password")}, ...}}
// ("username" and "password" fields are read too). Keys may be written as URLs
// ("https://host:port/v1/"); Docker Hub's "https://index.docker.io/v1/" is docker.io's.
namespace mkube::agent::image {

struct Credentials {
  std::string username, password;
};

// The credentials per registry host of a config.json's text; the error names what is wrong.
absl::StatusOr<std::map<std::string, Credentials>> ParseDockerConfig(const std::string& text);

// The registry host a config.json key stands for ("https://index.docker.io/v1/" → "docker.io").
std::string RegistryHostOf(std::string key);

// The file, read again when it changes (so credentials written after the agent started are
// used by the next pull). A missing file has no credentials; a file that cannot be parsed is
// logged and taken as having none.
class CredentialsFile {
 public:
  explicit CredentialsFile(std::string path) : path_(std::move(path)) {}
  std::optional<Credentials> For(const std::string& registry);

 private:
  const std::string path_;
  std::mutex mu_;
  std::optional<std::pair<std::time_t, long>> seen_;  // the file's modification time, read
  std::map<std::string, Credentials> by_host_;
};

}  // namespace mkube::agent::image
