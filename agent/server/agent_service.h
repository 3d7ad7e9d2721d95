#pragma once

#include <string>

#include "agent/node/usage.h"
#include "agent/pods/pod_workers.h"
#include "agent/server/serving.h"
#include "proto/agent/agent.grpc.pb.h"
#include "proto/agent/stats.grpc.pb.h"

namespace mkube::agent::server {

// Serves a container's logs and runs commands in containers, for the apiserver (which checks
// who may). Only the apiserver may call (see ApiserverAuth).
class AgentService final : public Agent::Service {
 public:
  AgentService(pods::PodWorkers* pods, const ApiserverAuth* auth) : pods_(pods), auth_(auth) {}

  grpc::Status Logs(grpc::ServerContext* ctx, const LogRequest* req,
                    grpc::ServerWriter<LogChunk>* writer) override;
  grpc::Status Exec(grpc::ServerContext* ctx,
                    grpc::ServerReaderWriter<ExecOutput, ExecInput>* stream) override;

 private:
  pods::PodWorkers* pods_;
  const ApiserverAuth* auth_;
};

// What the node's processes use, for the apiserver's metrics.k8s.io.
class StatsService final : public Stats::Service {
 public:
  StatsService(const node::UsageSampler* usage, const ApiserverAuth* auth)
      : usage_(usage), auth_(auth) {}

  grpc::Status Summary(grpc::ServerContext* ctx, const SummaryRequest* req,
                       SummaryReply* reply) override;

 private:
  const node::UsageSampler* usage_;
  const ApiserverAuth* auth_;
};

// Byte offset in the file where its last `lines` lines start.
int64_t TailOffset(int fd, int64_t lines);

}  // namespace mkube::agent::server
