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

// The node agents as the apiserver reaches them: at the Node's InternalIP and daemonEndpoints
// port, presenting the agent token. One channel per agent, made once and kept.
class Agents {
 public:
  explicit Agents(std::string token) : token_(std::move(token)) {}

  absl::StatusOr<std::shared_ptr<grpc::Channel>> ChannelTo(const api::Node& node)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Presents the agent token on a call.
  void Authorize(grpc::ClientContext* ctx) const {
    ctx->AddMetadata("authorization", "Bearer " + token_);
  }

 private:
  const std::string token_;
  absl::Mutex mu_;
  // By agent endpoint: as many as the cluster has nodes.
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mkube::apiserver::server
