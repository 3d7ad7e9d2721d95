#include "apiserver/rest/paths.h"

#include "absl/strings/str_split.h"
#include "apiserver/rest/discovery.h"
#include "apiserver/rest/encoding.h"
#include "base/http/server.h"
#include "fmt/format.h"

namespace mkube::apiserver::rest {
namespace {

const api::KindInfo* KindAt(std::string_view group, std::string_view version,
                            std::string_view resource) {
  for (const auto& k : api::Kinds()) {
    if (k.group == group && k.version == version && k.resource == resource) return &k;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  for (absl::string_view s :
       absl::StrSplit(absl::string_view(path.data(), path.size()), '/', absl::SkipEmpty())) {
    out.push_back(mkube::http::UrlDecode(std::string_view(s.data(), s.size())));
  }
  return out;
}

bool IsResourcePath(std::string_view path) {
  auto s = Segments(path);
  if (s.empty()) return false;
  if (s[0] == "api") return s.size() >= 3;
  if (s[0] == "apis") return s.size() >= 4;
  return false;
}

absl::StatusOr<Target> ParseTarget(std::string_view path) {
  auto s = Segments(path);
  Target t;
  size_t i = 0;
  if (s.size() >= 3 && s[0] == "api") {
    t.version = s[1];
    i = 2;
  } else if (s.size() >= 4 && s[0] == "apis") {
    t.group = s[1];
    t.version = s[2];
    i = 3;
  } else {
    return NotServed();
  }
  // namespaces/<ns>/<resource>...; but namespaces/<name>[/status] is the Namespace itself.
  if (s[i] == "namespaces" && s.size() >= i + 3 && t.group.empty() && s[i + 2] != "status" &&
      s[i + 2] != "finalize") {
    t.ns = s[i + 1];
    i += 2;
  } else if (s[i] == "namespaces" && s.size() >= i + 3 && !t.group.empty()) {
    t.ns = s[i + 1];
    i += 2;
  }
  const std::string& resource = s[i];
  t.kind = KindAt(t.group, t.version, resource);
  if (!t.kind) {
    for (const auto& r : Reviews()) {
      if (r.group == t.group && r.version == t.version && r.resource == resource &&
          s.size() == i + 1) {
        t.review = resource;
        return t;
      }
    }
    return NotServed();
  }
  if (s.size() > i + 1) t.name = s[i + 1];
  if (s.size() > i + 2) t.subresource = s[i + 2];
  if (s.size() > i + 3) return NotServed();
  if (!t.ns.empty() && !t.kind->namespaced) return NotServed();
  if (!t.subresource.empty() && !FindSubresource(*t.kind, t.subresource)) return NotServed();
  return t;
}

}  // namespace mkube::apiserver::rest
