#include "apiserver/server/agents.h"

#include <arpa/inet.h>

#include "fmt/format.h"

namespace mkube::apiserver::server {
namespace {

bool IsLoopbackIp(const std::string& ip) {
  in_addr a{};
  if (inet_pton(AF_INET, ip.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return ip == "::1";
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> Agents::ChannelTo(const api::Node& node) {
  const std::string& name = node.metadata().name();
  std::string ip;
  for (const auto& a : node.status().addresses()) {
    if (a.type() == "InternalIP" && ip.empty()) ip = a.address();
  }
  const int port = node.status().daemon_endpoints().kubelet_endpoint().port();
  if (ip.empty() || port <= 0) {
    return absl::FailedPreconditionError(
        fmt::format("node \"{}\" has not reported where its agent listens", name));
  }
  if (!credentials_.tls()) {
    if (credentials_.token.empty()) {
      return absl::FailedPreconditionError(
          "this apiserver has no credentials for node agents (start it with "
          "--agent-client-certificate, --agent-client-key and --agent-certificate-authority)");
    }
    if (!IsLoopbackIp(ip)) {
      return absl::FailedPreconditionError(fmt::format(
          "node \"{}\" is at {}, not a loopback address: reaching its agent needs TLS (start "
          "the apiserver with --agent-client-certificate, --agent-client-key and "
          "--agent-certificate-authority)",
          name, ip));
    }
  }
  const std::string endpoint = ip.find(':') == std::string::npos
                                   ? fmt::format("{}:{}", ip, port)
                                   : fmt::format("[{}]:{}", ip, port);
  absl::MutexLock lock(&mu_);
  auto& c = channels_[name + "@" + endpoint];
  if (c) return c;
  if (!credentials_.tls()) {
    c = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
    return c;
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = credentials_.ca_pem;
  ssl.pem_cert_chain = credentials_.cert_pem;
  ssl.pem_private_key = credentials_.key_pem;
  grpc::ChannelArguments args;
  // The agent's certificate must be for this node: its name, not whatever the address is.
  args.SetSslTargetNameOverride(name);
  c = grpc::CreateCustomChannel(endpoint, grpc::SslCredentials(ssl), args);
  return c;
}

}  // namespace mkube::apiserver::server
