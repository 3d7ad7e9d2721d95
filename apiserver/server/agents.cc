#include "apiserver/server/agents.h"

#include "fmt/format.h"

namespace mkube::apiserver::server {

absl::StatusOr<std::shared_ptr<grpc::Channel>> Agents::ChannelTo(const api::Node& node) {
  std::string ip;
  for (const auto& a : node.status().addresses()) {
    if (a.type() == "InternalIP" && ip.empty()) ip = a.address();
  }
  const int port = node.status().daemon_endpoints().kubelet_endpoint().port();
  if (ip.empty() || port <= 0) {
    return absl::FailedPreconditionError(fmt::format(
        "node \"{}\" has not reported where its agent listens", node.metadata().name()));
  }
  if (token_.empty()) {
    return absl::FailedPreconditionError(
        "this apiserver has no token for node agents (start it with --agent-token-file)");
  }
  const std::string endpoint = fmt::format("{}:{}", ip, port);
  absl::MutexLock lock(&mu_);
  auto& c = channels_[endpoint];
  if (!c) c = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
  return c;
}

}  // namespace mkube::apiserver::server
