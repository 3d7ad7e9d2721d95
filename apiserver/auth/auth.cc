#include "apiserver/auth/auth.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace mkube::apiserver::auth {
namespace {

// Splits one CSV line, honouring double quotes.
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  return out;
}

bool HasGroup(const registry::Caller& c, const std::string& g) {
  return std::find(c.groups.begin(), c.groups.end(), g) != c.groups.end();
}

bool ReadOnly(const std::string& verb) {
  return verb == "get" || verb == "list" || verb == "watch";
}

// Reading objects, not what runs in pods (their logs) — that stays with the admins.
bool ReadsObjects(const Attributes& a) {
  return ReadOnly(a.verb) && !(a.resource == "pods" && a.subresource == "log");
}

absl::Status Deny(const registry::Caller& c, const Attributes& a) {
  std::string what = a.resource + (a.subresource.empty() ? "" : "/" + a.subresource);
  std::string scope = a.ns.empty() ? "at the cluster scope" : fmt::format("in the namespace \"{}\"", a.ns);
  return absl::PermissionDeniedError(fmt::format(
      "{} \"{}\" is forbidden: User \"{}\" cannot {} resource \"{}\" {}", what, a.name, c.user,
      a.verb, what, scope));
}

}  // namespace

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(fmt::format("cannot read token file {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return FromText(ss.str());
}

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::FromText(const std::string& text) {
  TokenAuthenticator a;
  int n = 0;
  for (const std::string& line : std::vector<std::string>(absl::StrSplit(text, '\n'))) {
    ++n;
    std::string l(line);
    if (l.empty() || l[0] == '#') continue;
    auto f = SplitCsv(l);
    if (f.size() < 3 || f[0].empty() || f[1].empty()) {
      return absl::InvalidArgumentError(
          fmt::format("token file line {}: want token,user,uid[,\"groups\"]", n));
    }
    registry::Caller c;
    c.user = f[1];
    if (f.size() > 3) c.groups = absl::StrSplit(f[3], ',', absl::SkipEmpty());
    a.tokens_[f[0]] = std::move(c);
  }
  return a;
}

absl::StatusOr<registry::Caller> TokenAuthenticator::Authenticate(const std::string& header) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (header.rfind(kBearer, 0) != 0) {
    return absl::UnauthenticatedError("Unauthorized: no bearer token");
  }
  auto it = tokens_.find(header.substr(kBearer.size()));
  if (it == tokens_.end()) return absl::UnauthenticatedError("Unauthorized");
  return it->second;
}

absl::Status Authorize(const registry::Caller& c, const Attributes& a) {
  if (HasGroup(c, "system:masters") || c.user == "system:kube-controller-manager" ||
      HasGroup(c, "system:kube-controller-manager")) {
    return absl::OkStatus();
  }
  if (c.user == "system:kube-scheduler" || HasGroup(c, "system:kube-scheduler")) {
    if (ReadsObjects(a)) return absl::OkStatus();
    if (a.resource == "pods" && a.subresource == "binding" && a.verb == "create") return absl::OkStatus();
    if (a.resource == "pods" && a.subresource == "status" && (a.verb == "update" || a.verb == "patch")) return absl::OkStatus();
    if (a.resource == "events") return absl::OkStatus();
    if (a.resource == "leases" && a.ns == "kube-system") return absl::OkStatus();
    return Deny(c, a);
  }
  if (const std::string node = NodeOf(c); !node.empty()) {
    if (ReadsObjects(a)) return absl::OkStatus();
    if (a.resource == "events" && (a.verb == "create" || a.verb == "update" || a.verb == "patch")) {
      return absl::OkStatus();
    }
    if (a.resource == "nodes" && a.name == node) return absl::OkStatus();
    if (a.resource == "leases" && a.ns == "kube-node-lease" && a.name == node) return absl::OkStatus();
    if (a.resource == "pods" && a.pod_node == node &&
        ((a.subresource == "status" && (a.verb == "update" || a.verb == "patch")) ||
         (a.subresource.empty() && a.verb == "delete"))) {
      return absl::OkStatus();
    }
    return Deny(c, a);
  }
  return Deny(c, a);
}

std::string NodeOf(const registry::Caller& c) {
  constexpr std::string_view kNodePrefix = "system:node:";
  if (!HasGroup(c, "system:nodes") || c.user.rfind(kNodePrefix, 0) != 0) return "";
  return c.user.substr(kNodePrefix.size());
}

}  // namespace mkube::apiserver::auth
