#include "agent/image/credentials.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "base/log.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace mkube::agent::image {

std::string RegistryHostOf(std::string key) {
  for (const char* scheme : {"https://", "http://"}) {
    if (absl::StartsWith(key, scheme)) key.erase(0, std::string_view(scheme).size());
  }
  if (auto slash = key.find('/'); slash != std::string::npos) key.erase(slash);
  if (key == "index.docker.io" || key == "registry-1.docker.io") return "docker.io";
  return key;
}

absl::StatusOr<std::map<std::string, Credentials>> ParseDockerConfig(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError("not a JSON object");
  std::map<std::string, Credentials> out;
  if (!j.contains("auths")) return out;
  if (!j["auths"].is_object()) return absl::InvalidArgumentError("\"auths\" is not an object");
  for (const auto& [key, entry] : j["auths"].items()) {
    if (!entry.is_object()) {
      return absl::InvalidArgumentError(fmt::format("auths[\"{}\"] is not an object", key));
    }
    Credentials c;
    for (const char* field : {"auth", "username", "password"}) {
      if (entry.contains(field) && !entry[field].is_string()) {
        return absl::InvalidArgumentError(
            fmt::format("auths[\"{}\"].{} is not a string", key, field));
      }
    }
    if (entry.contains("auth")) {
      std::string decoded;
      const std::string encoded = entry["auth"].get<std::string>();
      const auto colon =
          absl::Base64Unescape(encoded, &decoded) ? decoded.find(':') : std::string::npos;
      if (colon == std::string::npos) {
        return absl::InvalidArgumentError(
            fmt::format("auths[\"{}\"].auth is not base64 of \"user:password\"", key));
      }
      c = {decoded.substr(0, colon), decoded.substr(colon + 1)};
    } else {
      c.username = entry.value("username", "");
      c.password = entry.value("password", "");
    }
    if (c.username.empty() && c.password.empty()) continue;
    out[RegistryHostOf(key)] = std::move(c);
  }
  return out;
}

std::optional<Credentials> CredentialsFile::For(const std::string& registry) {
  std::lock_guard lock(mu_);
  struct stat st {};
  std::optional<std::pair<std::time_t, long>> now;
  if (stat(path_.c_str(), &st) == 0) now.emplace(st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  if (now != seen_) {
    seen_ = now;
    by_host_.clear();
    if (now) {
      std::ifstream in(path_);
      std::stringstream text;
      text << in.rdbuf();
      auto parsed = ParseDockerConfig(text.str());
      if (parsed.ok()) {
        by_host_ = std::move(*parsed);
      } else {
        // Read again at the next pull (a file caught half-written is whole by then).
        seen_.reset();
        log::Logger("images").error("registry credentials {}: {}", path_,
                                    std::string(parsed.status().message()));
      }
    }
  }
  auto it = by_host_.find(registry);
  if (it == by_host_.end()) return std::nullopt;
  return it->second;
}

}  // namespace mkube::agent::image
