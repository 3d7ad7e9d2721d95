#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace mkube::agent::server {

// The common name of the client certificate the apiserver presents to agents, which up.sh and
// the README's steps issue (CN=mkube-apiserver-agent-client); nothing a node holds has it.
inline constexpr char kApiserverClientName[] = "mkube-apiserver-agent-client";

// How the agent's port is served, from its flags.
struct ServingFlags {
  std::string listen;          // host:port
  std::string cert_file;       // --tls-cert-file: this node's serving certificate
  std::string key_file;        // --tls-private-key-file
  std::string client_ca_file;  // --client-ca-file: the CA that signed the apiserver's
  std::string client_name = kApiserverClientName;  // --apiserver-client-name
  std::string token_file;      // --agent-token-file: plaintext on loopback only
};

// Who may call the agent: the apiserver alone. With TLS, a caller whose client certificate the
// CA verified and whose common name is the apiserver's; on plaintext (loopback only), a caller
// presenting the agent token.
class ApiserverAuth {
 public:
  static ApiserverAuth Certificate(std::string client_name);
  static ApiserverAuth Token(std::string token);
  grpc::Status Check(grpc::ServerContext* ctx) const;
  bool tls() const { return tls_; }

 private:
  bool tls_ = false;
  std::string expected_;  // the common name, or the token
};

struct Serving {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  ApiserverAuth auth = ApiserverAuth::Token("");
};

// Credentials and caller check from the flags. TLS needs the certificate, its key and the
// client CA together; without TLS the address must be loopback and a token file given. Each
// error names the flag.
absl::StatusOr<Serving> ServingFromFlags(const ServingFlags& flags);

// Whether a host (of host:port) is loopback: localhost, ::1, 127.0.0.0/8.
bool IsLoopbackHost(std::string_view host);

}  // namespace mkube::agent::server
