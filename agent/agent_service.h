#pragma once

#include <string>

#include "agent/pod_manager.h"
#include "agent/usage.h"
#include "proto/agent/agent.grpc.pb.h"
#include "proto/agent/stats.grpc.pb.h"

namespace mkube::agent {

// Serves a container's logs and runs commands in containers, for the apiserver (which checks
// who may). Callers must present the agent token.
class AgentService final : public Agent::Service {
 public:
  AgentService(PodManager* pods, std::string token) : pods_(pods), token_(std::move(token)) {}

  grpc::Status Logs(grpc::ServerContext* ctx, const LogRequest* req,
                    grpc::ServerWriter<LogChunk>* writer) override;
  grpc::Status Exec(grpc::ServerContext* ctx,
                    grpc::ServerReaderWriter<ExecOutput, ExecInput>* stream) override;

 private:
  PodManager* pods_;
  const std::string token_;
};

// What the node's processes use, for the apiserver's metrics.k8s.io.
class StatsService final : public Stats::Service {
 public:
  StatsService(const UsageSampler* usage, std::string token)
      : usage_(usage), token_(std::move(token)) {}

  grpc::Status Summary(grpc::ServerContext* ctx, const SummaryRequest* req,
                       SummaryReply* reply) override;

 private:
  const UsageSampler* usage_;
  const std::string token_;
};

// Only the apiserver, presenting the agent token, may call the agent.
grpc::Status AuthenticateApiserver(grpc::ServerContext* ctx, const std::string& token);

// Byte offset in the file where its last `lines` lines start.
int64_t TailOffset(int fd, int64_t lines);

}  // namespace mkube::agent
