#pragma once

#include <memory>
#include <string>

#include "apiserver/auth/auth.h"
#include "apiserver/registry/registry.h"
#include "apiserver/server/agents.h"
#include "proto/agent/agent.grpc.pb.h"
#include "proto/apiserver/apiserver.grpc.pb.h"

namespace mkube::apiserver::server {

// pods/log and pods/exec: checks who asks and what for, finds the pod's node and relays the
// stream to that node's agent. Streams run on gRPC's synchronous threads: each is long-lived
// and mostly waits. Nothing is queued in between: each message is read from one side and
// written to the other before the next is read, so a slow reader holds up its writer through
// gRPC's flow control rather than filling memory here.
class PodStreamsService final : public PodStreams::Service {
 public:
  PodStreamsService(registry::Registry* registry, const auth::TokenAuthenticator* authn,
                    Agents* agents)
      : registry_(registry), authn_(authn), agents_(agents) {}

  grpc::Status Logs(grpc::ServerContext* ctx, const agent::LogRequest* req,
                    grpc::ServerWriter<agent::LogChunk>* writer) override;
  grpc::Status Exec(grpc::ServerContext* ctx,
                    grpc::ServerReaderWriter<agent::ExecOutput, agent::ExecInput>* stream) override;

 private:
  struct Target {
    std::unique_ptr<agent::Agent::Stub> stub;
    std::string pod_uid;
    std::string container;
  };
  // Authorizes `verb` on pods/<subresource>, then finds the pod's agent and container.
  absl::StatusOr<Target> Resolve(grpc::ServerContext* ctx, const std::string& verb,
                                 const std::string& subresource, const std::string& ns,
                                 const std::string& pod, const std::string& container);
  std::unique_ptr<grpc::ClientContext> AgentContext(grpc::ServerContext* ctx) const;

  registry::Registry* registry_;
  const auth::TokenAuthenticator* authn_;
  Agents* agents_;
};

}  // namespace mkube::apiserver::server
