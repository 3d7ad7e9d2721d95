#pragma once

#include <memory>
#include <string>

#include "apiserver/auth/auth.h"
#include "apiserver/registry/registry.h"
#include "apiserver/server/agents.h"
#include "apiserver/server/gate.h"
#include "proto/agent/agent.grpc.pb.h"
#include "proto/agent/port_forward.grpc.pb.h"
#include "proto/apiserver/apiserver.grpc.pb.h"
#include "proto/apiserver/port_forward.grpc.pb.h"

namespace mkube::apiserver::server {

// Where a stream for a pod goes (logs, exec, port forwarding), for both fronts: checks who
// asks and what for, finds the pod's node and that node's agent.
class PodTargets {
 public:
  PodTargets(registry::Registry* registry, const Gate* gate, Agents* agents)
      : registry_(registry), gate_(gate), agents_(agents) {}

  struct Target {
    std::shared_ptr<grpc::Channel> channel;  // to the agent of the pod's node
    std::string node;
    std::string pod_uid;
    std::string container;  // none for portforward
  };
  // Authorizes `verb` on pods/<subresource>, then finds the pod's agent and container.
  absl::StatusOr<Target> Resolve(const registry::Caller& caller, const std::string& verb,
                                 const std::string& subresource, const std::string& ns,
                                 const std::string& pod, const std::string& container) const;
  // Presents the apiserver to the agent on a call.
  void Authorize(grpc::ClientContext* ctx) const { agents_->Authorize(ctx); }

 private:
  registry::Registry* registry_;
  const Gate* gate_;
  Agents* agents_;
};

// An agent that cannot be reached (down, or refused in the TLS handshake: not the node's
// agent) is the server's error, as kube-apiserver reports a kubelet it cannot reach, not
// UNAVAILABLE, which clients take for the apiserver's own.
grpc::Status FromAgent(const grpc::Status& st, const std::string& node);

// pods/log and pods/exec over gRPC: relays the stream to the pod's agent. Streams run on
// gRPC's synchronous threads: each is long-lived and mostly waits. Nothing is queued in
// between: each message is read from one side and written to the other before the next is
// read, so a slow reader holds up its writer through gRPC's flow control rather than filling
// memory here.
class PodStreamsService final : public PodStreams::Service {
 public:
  PodStreamsService(const PodTargets* targets, const auth::TokenAuthenticator* authn)
      : targets_(targets), authn_(authn) {}

  grpc::Status Logs(grpc::ServerContext* ctx, const agent::LogRequest* req,
                    grpc::ServerWriter<agent::LogChunk>* writer) override;
  grpc::Status Exec(grpc::ServerContext* ctx,
                    grpc::ServerReaderWriter<agent::ExecOutput, agent::ExecInput>* stream) override;

  // The caller the call's token names, then PodTargets::Resolve.
  absl::StatusOr<PodTargets::Target> Resolve(grpc::ServerContext* ctx, const std::string& verb,
                                             const std::string& subresource, const std::string& ns,
                                             const std::string& pod,
                                             const std::string& container) const;
  // A call to the agent, ended with the caller's and carrying the agent token.
  std::unique_ptr<grpc::ClientContext> AgentContext(grpc::ServerContext* ctx) const;

 private:
  const PodTargets* targets_;
  const auth::TokenAuthenticator* authn_;
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
