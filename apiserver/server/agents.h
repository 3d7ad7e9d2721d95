#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/api/core.pb.h"

namespace mkube::apiserver::server {

// How the apiserver proves itself to the node agents, and checks them.
struct AgentCredentials {
  // TLS (PEM): the CA that signed the agents' serving certificates, and the apiserver's
  // client certificate and key (CN mkube-apiserver-agent-client).
  std::string ca_pem, cert_pem, key_pem;
  // Without TLS: the token presented to agents on loopback addresses.
  std::string token;
  bool tls() const { return !cert_pem.empty(); }
};

// The node agents as the apiserver reaches them: at the Node's InternalIP and daemonEndpoints
// port. With TLS, the agent must present a certificate from the CA for the node's name (a
// server at that address with another node's certificate is refused) and the apiserver
// presents its client certificate; otherwise only agents on loopback addresses are reached,
// with the token. One channel per node and address, made once and kept.
class Agents {
 public:
  explicit Agents(AgentCredentials credentials) : credentials_(std::move(credentials)) {}

  absl::StatusOr<std::shared_ptr<grpc::Channel>> ChannelTo(const api::Node& node)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Presents the agent token on a call (plaintext only: with TLS the certificate speaks).
  void Authorize(grpc::ClientContext* ctx) const {
    if (!credentials_.tls()) ctx->AddMetadata("authorization", "Bearer " + credentials_.token);
  }

 private:
  const AgentCredentials credentials_;
  absl::Mutex mu_;
  // By node name and agent endpoint: as many as the cluster has nodes.
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mkube::apiserver::server
