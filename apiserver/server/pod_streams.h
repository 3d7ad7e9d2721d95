#pragma once

#include <memory>
#include <string>

#include "apiserver/auth/auth.h"
#include "apiserver/registry/registry.h"
#include "apiserver/server/agents.h"
#include "proto/agent/agent.grpc.pb.h"
#include "proto/agent/port_forward.grpc.pb.h"
#include "proto/apiserver/apiserver.grpc.pb.h"
#include "proto/apiserver/port_forward.grpc.pb.h"

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

  // Where a stream for the pod goes (also for port forwarding).
  struct Target {
    std::shared_ptr<grpc::Channel> channel;  // to the agent of the pod's node
    std::string node;
    std::string pod_uid;
    std::string container;  // none for portforward
  };
  // Authorizes `verb` on pods/<subresource>, then finds the pod's agent and container.
  absl::StatusOr<Target> Resolve(grpc::ServerContext* ctx, const std::string& verb,
                                 const std::string& subresource, const std::string& ns,
                                 const std::string& pod, const std::string& container);
  // A call to the agent, ended with the caller's and carrying the agent token.
  std::unique_ptr<grpc::ClientContext> AgentContext(grpc::ServerContext* ctx) const;

 private:
  registry::Registry* registry_;
  const auth::TokenAuthenticator* authn_;
  Agents* agents_;
};

// pods/portforward: one stream per TCP connection, relayed to the agent as exec is.
class PodPortForwardService final : public PodPortForward::Service {
 public:
  explicit PodPortForwardService(PodStreamsService* streams) : streams_(streams) {}

  grpc::Status Forward(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<agent::PortForwardData, agent::PortForwardData>* stream) override;

 private:
  PodStreamsService* streams_;
};

}  // namespace mkube::apiserver::server
