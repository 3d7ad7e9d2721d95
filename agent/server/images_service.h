#pragma once

#include "agent/runtime/image.h"
#include "agent/server/serving.h"
#include "proto/agent/images.grpc.pb.h"

namespace mkube::agent::server {

// Images loaded into this node's store from an archive the apiserver relays, and what one of
// them says of itself.
class ImagesService final : public NodeImages::Service {
 public:
  ImagesService(runtime::ImageStore* images, const ApiserverAuth* auth)
      : images_(images), auth_(auth) {}

  grpc::Status Load(grpc::ServerContext* ctx, grpc::ServerReader<ImageLoadChunk>* reader,
                    ImageLoadReply* reply) override;
  grpc::Status Inspect(grpc::ServerContext* ctx, const ImageInspectRequest* req,
                       ImageInspectReply* reply) override;

 private:
  runtime::ImageStore* images_;
  const ApiserverAuth* auth_;
};

}  // namespace mkube::agent::server
