#include "cli/session.h"

#include <iostream>
#include <thread>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "cli/args.h"
#include "fmt/format.h"

namespace mkube::cli {
namespace {

// kubectl's --request-timeout: "0" (none), a bare number of seconds, or 500ms / 1s / 2m / 1h.
absl::StatusOr<std::chrono::milliseconds> RequestTimeout(const std::string& s) {
  if (s.empty() || s == "0") return std::chrono::milliseconds(std::chrono::hours(24));
  if (int64_t ms = 0;
      s.ends_with("ms") && absl::SimpleAtoi(s.substr(0, s.size() - 2), &ms) && ms >= 0) {
    return std::chrono::milliseconds(ms);
  }
  if (auto d = ParseDuration(s, "--request-timeout"); d.ok() && !s.ends_with("ms")) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  }
  return UserError(fmt::format("error: invalid argument \"{}\" for \"--request-timeout\"", s));
}

}  // namespace

absl::Status UserError(std::string line) { return absl::FailedPreconditionError(line); }
absl::Status Reported() { return absl::CancelledError(""); }

namespace {
constexpr char kExitCodePayload[] = "mkube.io/exit-code";
}  // namespace

absl::Status ExitWith(int code, std::string line) {
  absl::Status st = absl::AbortedError(std::move(line));
  st.SetPayload(kExitCodePayload, absl::Cord(std::to_string(code)));
  return st;
}

int ExitCodeOf(const absl::Status& st) {
  int code = 1;
  if (auto p = st.GetPayload(kExitCodePayload)) {
    if (!absl::SimpleAtoi(std::string(*p), &code) || code <= 0 || code > 255) code = 1;
  }
  return code;
}

absl::StatusOr<std::unique_ptr<Session>> Session::Open(const Globals& g) {
  std::unique_ptr<Session> s(new Session());
  auto cfg = LoadKubeConfig(KubeConfigPath(g.kubeconfig));
  if (cfg.ok()) {
    s->cfg_ = *cfg;
  } else if (g.server.empty()) {
    return UserError("error: " + std::string(cfg.status().message()));
  }
  if (!g.server.empty()) {
    s->cfg_.server = g.server;
    s->cfg_.address = g.server;
    s->cfg_.tls = !g.server.starts_with("http://");
    for (const char* scheme : {"https://", "http://"}) {
      if (s->cfg_.address.starts_with(scheme))
        s->cfg_.address = s->cfg_.address.substr(std::strlen(scheme));
    }
  }
  if (!g.token.empty()) s->cfg_.token = g.token;
  if (!g.ns.empty()) s->cfg_.namespace_ = g.ns;
  s->ns_flag_ = g.ns;
  MKUBE_ASSIGN_OR_RETURN(auto timeout, RequestTimeout(g.request_timeout));
  client::ClientOptions o;
  o.address = s->cfg_.address;
  o.token = s->cfg_.token;
  if (s->cfg_.tls) o.ca_pem = s->cfg_.ca_pem;
  o.timeout = timeout;
  o.read_attempts = 2;
  s->options_ = o;
  s->client_ = std::make_unique<client::GrpcClient>(o);
  s->resources_ = std::make_unique<Resources>(s->client_.get());
  return s;
}

absl::Status Session::Worded(const absl::Status& st) const {
  return st.ok() ? st : UserError(ErrorLine(st, cfg_.address));
}

void Session::PrintError(const absl::Status& st) const {
  std::cerr << Worded(st).message() << "\n";
}

absl::StatusOr<const api::KindInfo*> KindNamed(const std::string& name) {
  const api::KindInfo* k = api::FindResource(name);
  if (!k)
    return UserError(fmt::format("error: the server doesn't have a resource type \"{}\"", name));
  return k;
}

absl::StatusOr<std::vector<Target>> ParseTargets(const std::vector<std::string>& args,
                                                 bool names_required) {
  std::vector<Target> out;
  if (args.empty()) return UserError("error: you must specify the type of resource");
  if (args[0].find('/') != std::string::npos) {
    for (const auto& a : args) {
      auto slash = a.find('/');
      if (slash == std::string::npos) {
        return UserError(
            "error: there is no need to specify a resource type as a separate argument when "
            "passing "
            "arguments in resource/name form (e.g. 'mkubectl get resource/<resource_name>' instead "
            "of "
            "'mkubectl get resource resource/<resource_name>'");
      }
      MKUBE_ASSIGN_OR_RETURN(const api::KindInfo* kind, KindNamed(a.substr(0, slash)));
      out.push_back({kind, a.substr(slash + 1)});
    }
    return out;
  }
  // "deploy,po": several types, each with every name given (or none).
  std::vector<const api::KindInfo*> kinds;
  for (absl::string_view type : absl::StrSplit(args[0], ',')) {
    MKUBE_ASSIGN_OR_RETURN(const api::KindInfo* kind, KindNamed(std::string(type)));
    kinds.push_back(kind);
  }
  for (const api::KindInfo* kind : kinds) {
    for (size_t i = 1; i < args.size(); ++i) out.push_back({kind, args[i]});
  }
  if (out.empty()) {
    if (names_required)
      return UserError("error: resource(s) were provided, but no name was specified");
    for (const api::KindInfo* kind : kinds) out.push_back({kind, ""});
  }
  return out;
}

absl::StatusOr<std::chrono::seconds> DurationFlag(const std::string& text,
                                                  const std::string& flag) {
  auto d = ParseDuration(text == "0s" ? "0" : text, flag);
  if (!d.ok()) return UserError("error: " + std::string(d.status().message()));
  return *d;
}

bool WaitGone(Session& s, const api::KindInfo& kind, const std::string& ns, const std::string& name,
              std::chrono::seconds timeout) {
  const auto deadline =
      std::chrono::steady_clock::now() + (timeout.count() ? timeout : std::chrono::hours(24 * 7));
  while (std::chrono::steady_clock::now() < deadline) {
    auto obj = s.res().Get(kind, ns, name);
    if (!obj.ok() && obj.status().code() == absl::StatusCode::kNotFound) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

void NoResources(const Session& s, const api::KindInfo& kind, bool all_namespaces) {
  if (all_namespaces || !kind.namespaced) {
    std::cerr << "No resources found\n";
  } else {
    std::cerr << "No resources found in " << s.ns() << " namespace.\n";
  }
}

}  // namespace mkube::cli
