#include "agent/image/reference.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace mkube::agent::image {
namespace {

constexpr char kDockerHub[] = "docker.io";

bool LowerOrDigit(char ch) { return absl::ascii_islower(ch) || absl::ascii_isdigit(ch); }

// A path component: runs of lower-case letters and digits joined by one '.', one or two '_',
// or any number of '-'.
bool ValidComponent(std::string_view c) {
  if (c.empty() || !LowerOrDigit(c.front()) || !LowerOrDigit(c.back())) return false;
  for (size_t i = 0; i < c.size();) {
    if (LowerOrDigit(c[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < c.size() && !LowerOrDigit(c[j])) ++j;
    const std::string_view sep = c.substr(i, j - i);
    const bool dashes = sep.find_first_not_of('-') == std::string_view::npos;
    if (sep != "." && sep != "_" && sep != "__" && !dashes) return false;
    i = j;
  }
  return true;
}

bool ValidTag(std::string_view t) {
  if (t.empty() || t.size() > 128) return false;
  if (!absl::ascii_isalnum(t[0]) && t[0] != '_') return false;
  for (char ch : t) {
    if (!absl::ascii_isalnum(ch) && ch != '_' && ch != '.' && ch != '-') return false;
  }
  return true;
}

bool ValidDigest(std::string_view d) {
  const size_t colon = d.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view algorithm = d.substr(0, colon), hex = d.substr(colon + 1);
  if (algorithm != "sha256" || hex.size() != 64) return false;
  for (char ch : hex) {
    if (!absl::ascii_isdigit(ch) && !(ch >= 'a' && ch <= 'f')) return false;
  }
  return true;
}

// A first component names a registry when it has a '.' or a port or is "localhost" (as
// Docker reads "host/path"), and is a host's name or address, with a port of digits.
bool IsRegistry(std::string_view c) {
  std::string_view host = c;
  if (const size_t colon = c.rfind(':'); colon != std::string_view::npos && c.back() != ']') {
    const std::string_view port = c.substr(colon + 1);
    if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos)
      return false;
    host = c.substr(0, colon);
    if (host.empty()) return false;
  } else if (host != "localhost" && host.find('.') == std::string_view::npos &&
             host.front() != '[') {
    return false;
  }
  if (host.front() == '[') return host.back() == ']';  // an IPv6 address
  for (char ch : host) {
    if (!absl::ascii_isalnum(ch) && ch != '.' && ch != '-') return false;
  }
  return true;
}

}  // namespace

std::string Reference::String() const {
  std::string out = registry + "/" + repository;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

std::string Reference::Familiar() const {
  std::string out = String();
  if (registry == kDockerHub) {
    out = out.substr(sizeof kDockerHub);
    if (out.rfind("library/", 0) == 0 && repository.find('/', 8) == std::string::npos) {
      out = out.substr(8);
    }
  }
  return out;
}

absl::StatusOr<Reference> ParseReference(const std::string& text) {
  auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format("invalid image reference \"{}\": {}", text, why));
  };
  if (text.empty()) return invalid("it is empty");
  if (text.size() > 4096) return invalid("it is longer than 4096 characters");
  Reference ref;
  std::string rest = text;
  if (const size_t at = rest.find('@'); at != std::string::npos) {
    ref.digest = rest.substr(at + 1);
    rest.resize(at);
    if (!ValidDigest(ref.digest)) return invalid("the digest is not sha256: and 64 hex digits");
  }
  // The tag follows the last ':' that comes after the last '/' (a host's port comes before).
  const size_t slash = rest.rfind('/');
  if (const size_t colon = rest.rfind(':');
      colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    ref.tag = rest.substr(colon + 1);
    rest.resize(colon);
    if (!ValidTag(ref.tag))
      return invalid("the tag may hold only letters, digits, '_', '.' and '-'");
  }
  std::vector<std::string> parts = absl::StrSplit(rest, '/');
  if (parts.size() > 1 && IsRegistry(parts[0])) {
    ref.registry = parts[0];
    parts.erase(parts.begin());
  } else {
    ref.registry = kDockerHub;
  }
  for (const auto& p : parts) {
    if (!ValidComponent(p)) {
      return invalid(absl::AsciiStrToLower(p) != p
                         ? "the repository name must be lower case"
                         : fmt::format("\"{}\" is not a valid path component", p));
    }
  }
  if (ref.registry == kDockerHub && parts.size() == 1) parts.insert(parts.begin(), "library");
  ref.repository = absl::StrJoin(parts, "/");
  if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
  return ref;
}

}  // namespace mkube::agent::image
