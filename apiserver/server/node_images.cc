#include "apiserver/server/node_images.h"

#include "apiserver/server/metadata.h"
#include "apiserver/server/pod_streams.h"
#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"
#include "proto/grpc_status.h"

namespace mkube::apiserver::server {

grpc::Status NodeImagesService::Load(grpc::ServerContext* ctx,
                                     grpc::ServerReader<agent::ImageLoadChunk>* reader,
                                     agent::ImageLoadReply* reply) {
  // Who asks, before anything of what they send is read.
  auto caller = gate_->Authenticate(AuthorizationHeader(*ctx));
  if (!caller.ok()) return ToGrpc(caller.status());
  agent::ImageLoadChunk chunk;
  if (!reader->Read(&chunk) || chunk.node().empty()) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "the first message must name the node"};
  }
  const std::string node_name = chunk.node();
  if (auto st = gate_->Check(*caller, {"create", "nodes", "proxy", "", node_name, ""}); !st.ok()) {
    return ToGrpc(st);
  }
  auto node = registry_->GetAs<api::Node>("nodes", "", node_name);
  if (!node.ok()) return ToGrpc(node.status());
  auto channel = agents_->ChannelTo(*node);
  if (!channel.ok()) return ToGrpc(channel.status());
  log::Logger("images").info("{} loads images into node {}", caller->user, node_name);

  auto actx = grpc::ClientContext::FromServerContext(*ctx);
  agents_->Authorize(actx.get());
  auto stub = agent::NodeImages::NewStub(*channel);
  auto writer = stub->Load(actx.get(), reply);
  bool sent = true;
  do {
    if (!writer->Write(chunk)) {
      sent = false;  // the agent ended the call: its status says why
      break;
    }
  } while (reader->Read(&chunk));
  if (ctx->IsCancelled()) {
    // The caller went away mid-archive: the agent must not take a cut archive for a whole one.
    actx->TryCancel();
    writer->Finish();
    return {grpc::StatusCode::CANCELLED, "the caller went away"};
  }
  if (sent) writer->WritesDone();
  return FromAgent(writer->Finish(), node_name);
}

grpc::Status NodeImagesService::Inspect(grpc::ServerContext* ctx,
                                        const agent::ImageInspectRequest* req,
                                        agent::ImageInspectReply* reply) {
  auto caller = gate_->Authenticate(AuthorizationHeader(*ctx));
  if (!caller.ok()) return ToGrpc(caller.status());
  if (req->node().empty()) return {grpc::StatusCode::INVALID_ARGUMENT, "no node named"};
  if (auto st = gate_->Check(*caller, {"get", "nodes", "proxy", "", req->node(), ""}); !st.ok()) {
    return ToGrpc(st);
  }
  auto node = registry_->GetAs<api::Node>("nodes", "", req->node());
  if (!node.ok()) return ToGrpc(node.status());
  auto channel = agents_->ChannelTo(*node);
  if (!channel.ok()) return ToGrpc(channel.status());
  auto actx = grpc::ClientContext::FromServerContext(*ctx);
  agents_->Authorize(actx.get());
  return FromAgent(agent::NodeImages::NewStub(*channel)->Inspect(actx.get(), *req, reply),
                   req->node());
}

}  // namespace mkube::apiserver::server
