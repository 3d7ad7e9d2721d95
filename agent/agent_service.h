#pragma once

#include <string>

#include "agent/pod_manager.h"
#include "proto/agent/agent.grpc.pb.h"

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
  grpc::Status Authenticate(grpc::ServerContext* ctx) const;

  PodManager* pods_;
  const std::string token_;
};

// Byte offset in the file where its last `lines` lines start.
int64_t TailOffset(int fd, int64_t lines);

}  // namespace mkube::agent
