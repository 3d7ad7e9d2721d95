#include "agent/server/serving.h"

#include <arpa/inet.h>

#include "base/status.h"
#include "client/credentials.h"
#include "fmt/format.h"

namespace mkube::agent::server {
namespace {

// The PEM file a flag names, or an error naming the flag.
absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  auto text = client::ReadSecretFile(path);
  if (!text.ok() || text->empty()) {
    return absl::InvalidArgumentError(fmt::format("cannot read {} {}", flag, path));
  }
  return *text + "\n";
}

}  // namespace

ApiserverAuth ApiserverAuth::Certificate(std::string client_name) {
  ApiserverAuth a;
  a.tls_ = true;
  a.expected_ = std::move(client_name);
  return a;
}

ApiserverAuth ApiserverAuth::Token(std::string token) {
  ApiserverAuth a;
  a.expected_ = std::move(token);
  return a;
}

grpc::Status ApiserverAuth::Check(grpc::ServerContext* ctx) const {
  if (tls_) {
    // The TLS handshake has already required a certificate the client CA signed; among those
    // (every node holds one) only the apiserver's name may call.
    auto auth = ctx->auth_context();
    const auto names = auth ? auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME)
                            : std::vector<grpc::string_ref>{};
    for (const auto& n : names) {
      if (std::string_view(n.data(), n.size()) == expected_) return grpc::Status::OK;
    }
    const std::string who =
        names.empty() ? "no certificate" : std::string(names[0].data(), names[0].size());
    return {grpc::StatusCode::PERMISSION_DENIED,
            fmt::format("only the apiserver ({}) may call the agent, not {}", expected_, who)};
  }
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  const std::string want = "Bearer " + expected_;
  if (expected_.empty() || it == md.end() ||
      std::string_view(it->second.data(), it->second.size()) != want) {
    return {grpc::StatusCode::UNAUTHENTICATED, "Unauthorized"};
  }
  return grpc::Status::OK;
}

bool IsLoopbackHost(std::string_view host) {
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, std::string(host).c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

absl::StatusOr<Serving> ServingFromFlags(const ServingFlags& f) {
  Serving s;
  const bool any_tls = !f.cert_file.empty() || !f.key_file.empty() || !f.client_ca_file.empty();
  if (any_tls) {
    if (f.cert_file.empty() || f.key_file.empty() || f.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-cert-file, --tls-private-key-file and --client-ca-file go together");
    }
    MKUBE_ASSIGN_OR_RETURN(auto cert, ReadPem("--tls-cert-file", f.cert_file));
    MKUBE_ASSIGN_OR_RETURN(auto key, ReadPem("--tls-private-key-file", f.key_file));
    MKUBE_ASSIGN_OR_RETURN(auto ca, ReadPem("--client-ca-file", f.client_ca_file));
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_key_cert_pairs.push_back({key, cert});
    ssl.pem_root_certs = ca;
    s.credentials = grpc::SslServerCredentials(ssl);
    s.auth = ApiserverAuth::Certificate(f.client_name);
    return s;
  }
  const std::string host = f.listen.substr(0, f.listen.rfind(':'));
  if (!IsLoopbackHost(host)) {
    return absl::InvalidArgumentError(fmt::format(
        "{} is not a loopback address: serving it needs TLS (--tls-cert-file, "
        "--tls-private-key-file, --client-ca-file)",
        f.listen));
  }
  if (f.token_file.empty()) {
    return absl::InvalidArgumentError(
        "no way to know the apiserver: give --tls-cert-file, --tls-private-key-file and "
        "--client-ca-file, or on loopback --agent-token-file");
  }
  auto token = client::ReadSecretFile(f.token_file);
  if (!token.ok() || token->empty()) {
    return absl::InvalidArgumentError("cannot read a token from --agent-token-file " +
                                      f.token_file);
  }
  s.credentials = grpc::InsecureServerCredentials();
  s.auth = ApiserverAuth::Token(*token);
  return s;
}

}  // namespace mkube::agent::server
