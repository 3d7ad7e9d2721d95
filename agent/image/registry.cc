#include "agent/image/registry.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "agent/image/digest.h"
#include "agent/image/manifest.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::image {
namespace {

using Json = nlohmann::json;
using Sink = std::function<absl::Status(std::string_view)>;

constexpr size_t kMaxBody = 4 << 20;  // of a manifest, a token or an error

std::string Base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string Escape(CURL* curl, const std::string& s) {
  char* e = curl_easy_escape(curl, s.c_str(), static_cast<int>(s.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

// A registry's error answer ({"errors":[{"code","message"}]}), or its first bytes.
std::string RegistrySays(const std::string& body) {
  const Json j = Json::parse(body, nullptr, false);
  std::vector<std::string> said;
  if (j.is_object() && j.contains("errors") && j["errors"].is_array()) {
    for (const auto& e : j["errors"]) {
      if (e.is_object()) said.push_back(e.value("code", "") + ": " + e.value("message", ""));
    }
  }
  if (!said.empty()) return absl::StrJoin(said, "; ");
  return body.size() > 200 ? body.substr(0, 200) + "..." : body;
}

// One transfer's state, for libcurl's callbacks.
struct Transfer {
  CURL* curl;
  std::string body;
  std::map<std::string, std::string> headers;  // of the last answer; names in lower case
  const Sink* sink = nullptr;
  absl::Status sink_status;
};

size_t OnData(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  long code = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  if (code == 200 && t->sink) {
    t->sink_status = (*t->sink)(std::string_view(data, len));
    return t->sink_status.ok() ? len : 0;
  }
  if (t->body.size() + len > kMaxBody) return 0;
  t->body.append(data, len);
  return len;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const absl::string_view line(data, size * n);
  if (absl::StartsWith(line, "HTTP/")) {
    t->headers.clear();  // a new answer (after a redirect)
  } else if (const size_t colon = line.find(':'); colon != absl::string_view::npos) {
    std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    t->headers[absl::AsciiStrToLower(line.substr(0, colon))] = std::move(value);
  }
  return size * n;
}

}  // namespace

struct RegistryClient::Answer {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
};

Challenge ParseChallenge(std::string_view text) {
  const absl::string_view header(text.data(), text.size());
  Challenge c;
  const size_t space = header.find(' ');
  c.scheme = absl::AsciiStrToLower(header.substr(0, space));
  if (space == absl::string_view::npos) return c;
  absl::string_view rest = header.substr(space + 1);
  while (!rest.empty()) {
    rest = absl::StripLeadingAsciiWhitespace(rest);
    const size_t eq = rest.find('=');
    if (eq == absl::string_view::npos) break;
    const std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(rest.substr(0, eq)));
    rest.remove_prefix(eq + 1);
    std::string value;
    if (!rest.empty() && rest.front() == '"') {
      const size_t close = rest.find('"', 1);
      value = std::string(rest.substr(1, close == absl::string_view::npos ? close : close - 1));
      rest.remove_prefix(close == absl::string_view::npos ? rest.size() : close + 1);
    } else {
      const size_t comma = rest.find(',');
      value = std::string(absl::StripAsciiWhitespace(rest.substr(0, comma)));
      rest.remove_prefix(comma == absl::string_view::npos ? rest.size() : comma);
    }
    c.params[key] = std::move(value);
    rest = absl::StripLeadingAsciiWhitespace(rest);
    if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
  }
  return c;
}

std::string RegistryClient::Base(const Reference& ref) const {
  const std::string host = ref.registry == "docker.io" ? "registry-1.docker.io" : ref.registry;
  return (options_.insecure.count(ref.registry) ? "http://" : "https://") + host;
}

absl::StatusOr<RegistryClient::Answer> RegistryClient::Once(const std::string& url,
                                                            const std::string& accept,
                                                            const std::string& authorization,
                                                            const Sink* sink) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return absl::InternalError("cannot start an HTTP client");
  Transfer t{.curl = curl.get(), .sink = sink};
  curl_slist* headers = nullptr;
  if (!accept.empty()) headers = curl_slist_append(headers, ("Accept: " + accept).c_str());
  if (!authorization.empty()) {
    headers = curl_slist_append(headers, ("Authorization: " + authorization).c_str());
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers,
                                                                          curl_slist_free_all);
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);  // blobs are often served from elsewhere
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "mkube-agent");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.stall_timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnData);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  const CURLcode rc = curl_easy_perform(c);
  if (!t.sink_status.ok()) return t.sink_status;
  if (rc != CURLE_OK) {
    return absl::UnavailableError(
        fmt::format("cannot get {}: {}", url, error[0] ? error : curl_easy_strerror(rc)));
  }
  Answer a{.body = std::move(t.body), .headers = std::move(t.headers)};
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
  return a;
}

absl::StatusOr<std::string> RegistryClient::Authorize(const Reference& ref,
                                                      const std::string& header) {
  const Challenge challenge = ParseChallenge(header);
  const auto creds =
      options_.credentials ? options_.credentials(ref.registry) : std::optional<Credentials>();
  const std::string basic =
      creds ? "Basic " + Base64(creds->username + ":" + creds->password) : std::string();
  if (challenge.scheme == "basic") {
    if (basic.empty()) {
      return absl::PermissionDeniedError(fmt::format(
          "the registry {} asks for credentials, and the node has none for it", ref.registry));
    }
    return basic;
  }
  if (challenge.scheme != "bearer" || !challenge.params.count("realm")) {
    return absl::PermissionDeniedError(
        fmt::format("the registry {} asks for an authentication it does not name (\"{}\")",
                    ref.registry, header));
  }
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  auto param = [&](const char* k, const std::string& fallback) {
    auto it = challenge.params.find(k);
    return Escape(curl.get(), it == challenge.params.end() ? fallback : it->second);
  };
  const std::string realm = challenge.params.at("realm");
  const std::string url = realm + (realm.find('?') == std::string::npos ? "?" : "&") +
                          "service=" + param("service", "") +
                          "&scope=" + param("scope", "repository:" + ref.repository + ":pull");
  MKUBE_ASSIGN_OR_RETURN(Answer a, Once(url, "application/json", basic, nullptr));
  if (a.status == 401 || a.status == 403) {
    return absl::PermissionDeniedError(fmt::format(
        "the registry {} refused {}: {}", ref.registry,
        basic.empty() ? "to give a token without credentials" : "the node's credentials",
        RegistrySays(a.body)));
  }
  const Json j = Json::parse(a.body, nullptr, false);
  std::string token = j.is_object() ? j.value("token", j.value("access_token", "")) : "";
  if (a.status != 200 || token.empty()) {
    return absl::UnavailableError(fmt::format("the registry {} gave no token ({}): {}",
                                              ref.registry, a.status, RegistrySays(a.body)));
  }
  return "Bearer " + token;
}

absl::StatusOr<RegistryClient::Answer> RegistryClient::Get(const Reference& ref,
                                                           const std::string& path,
                                                           const std::string& accept,
                                                           const Sink* sink) {
  const std::string key = ref.registry + "/" + ref.repository;
  std::string authorization;
  {
    std::lock_guard<std::mutex> l(mu_);
    authorization = authorization_[key];
  }
  const std::string url = Base(ref) + path;
  MKUBE_ASSIGN_OR_RETURN(Answer a, Once(url, accept, authorization, sink));
  if (a.status != 401) return a;
  const std::string challenge = a.headers["www-authenticate"];
  MKUBE_ASSIGN_OR_RETURN(authorization, Authorize(ref, challenge));
  {
    std::lock_guard<std::mutex> l(mu_);
    authorization_[key] = authorization;
  }
  return Once(url, accept, authorization, sink);
}

namespace {

absl::Status AnswerError(const Reference& ref, const std::string& what, long status,
                         const std::string& body) {
  const std::string said = fmt::format("the registry {} answered {} for {}: {}", ref.registry,
                                       status, what, RegistrySays(body));
  if (status == 404) return absl::NotFoundError(said);
  if (status == 401 || status == 403) return absl::PermissionDeniedError(said);
  return absl::UnavailableError(said);
}

}  // namespace

absl::StatusOr<RegistryClient::Manifest> RegistryClient::GetManifest(const Reference& ref,
                                                                     const std::string& selector) {
  const std::string what = fmt::format("{}:{}", ref.repository, selector);
  MKUBE_ASSIGN_OR_RETURN(Answer a, Get(ref, "/v2/" + ref.repository + "/manifests/" + selector,
                                       std::string(kManifestAccept), nullptr));
  if (a.status != 200) return AnswerError(ref, "manifest " + what, a.status, a.body);
  Manifest m{.body = std::move(a.body), .content_type = a.headers["content-type"]};
  m.digest = Sha256Of(m.body);
  const std::string said = a.headers["docker-content-digest"];
  if (!DigestHex(selector).empty() && selector != m.digest) {
    return absl::DataLossError(
        fmt::format("manifest {} from {} hashes to {}", what, ref.registry, m.digest));
  }
  if (!said.empty() && said != m.digest) {
    return absl::DataLossError(
        fmt::format("manifest {} from {}: the registry says {}, its bytes hash to {}", what,
                    ref.registry, said, m.digest));
  }
  return m;
}

absl::Status RegistryClient::GetBlob(const Reference& ref, const std::string& digest,
                                     const Sink& sink) {
  MKUBE_ASSIGN_OR_RETURN(Answer a,
                         Get(ref, "/v2/" + ref.repository + "/blobs/" + digest, "", &sink));
  if (a.status != 200) return AnswerError(ref, "blob " + digest, a.status, a.body);
  return absl::OkStatus();
}

}  // namespace mkube::agent::image
