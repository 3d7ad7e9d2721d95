#pragma once

#include "apiserver/registry/registry.h"
#include "apiserver/server/agents.h"
#include "apiserver/server/gate.h"
#include "proto/agent/images.grpc.pb.h"

namespace mkube::apiserver::server {

// Images loaded into a node (`mkubectl image load`): the caller must be allowed to create
// nodes/proxy on the node (reaching a node's agent is an administrator's right, as the
// kubelet's API is in Kubernetes); the archive is then relayed to that node's agent as it
// comes, one message read from the caller and written to the agent at a time. Inspecting an
// image asks for get on nodes/proxy.
class NodeImagesService final : public agent::NodeImages::Service {
 public:
  NodeImagesService(registry::Registry* registry, const Gate* gate, Agents* agents)
      : registry_(registry), gate_(gate), agents_(agents) {}

  grpc::Status Load(grpc::ServerContext* ctx, grpc::ServerReader<agent::ImageLoadChunk>* reader,
                    agent::ImageLoadReply* reply) override;
  grpc::Status Inspect(grpc::ServerContext* ctx, const agent::ImageInspectRequest* req,
                       agent::ImageInspectReply* reply) override;

 private:
  registry::Registry* registry_;
  const Gate* gate_;
  Agents* agents_;
};

}  // namespace mkube::apiserver::server
