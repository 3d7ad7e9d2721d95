#include "agent/server/images_service.h"

#include "absl/strings/str_join.h"
#include "base/log.h"
#include "proto/grpc_status.h"

namespace mkube::agent::server {

grpc::Status ImagesService::Load(grpc::ServerContext* ctx,
                                 grpc::ServerReader<ImageLoadChunk>* reader,
                                 ImageLoadReply* reply) {
  if (auto st = auth_->Check(ctx); !st.ok()) return st;
  // The archive is read as it arrives: nothing of it is kept but the blobs it holds.
  ImageLoadChunk chunk;
  int64_t total = 0;
  auto source = [&]() -> absl::StatusOr<std::string_view> {
    if (ctx->IsCancelled()) return absl::CancelledError("the caller went away");
    // An empty piece would end the archive early: a sender's empty message is skipped.
    do {
      if (!reader->Read(&chunk)) {
        // A cancelled call is a cut archive, not its end.
        if (ctx->IsCancelled()) return absl::CancelledError("the caller went away");
        return std::string_view();
      }
    } while (chunk.data().empty());
    total += static_cast<int64_t>(chunk.data().size());
    return std::string_view(chunk.data());
  };
  auto loaded = images_->LoadArchive(source, "the archive");
  if (!loaded.ok()) return ToGrpc(loaded.status());
  reply->set_archive_bytes(total);
  auto& log = log::Logger("images");
  for (const auto& img : *loaded) {
    auto* out = reply->add_images();
    for (const auto& name : img.names) out->add_names(name);
    out->set_digest(img.digest);
    out->set_size_bytes(img.size_bytes);
    log.info("loaded image {} ({}, {} bytes)",
             img.names.empty() ? "<unnamed>" : absl::StrJoin(img.names, ", "), img.digest,
             img.size_bytes);
  }
  return grpc::Status::OK;
}

grpc::Status ImagesService::Inspect(grpc::ServerContext* ctx, const ImageInspectRequest* req,
                                    ImageInspectReply* reply) {
  if (auto st = auth_->Check(ctx); !st.ok()) return st;
  auto found = images_->Inspect(req->image());
  if (!found.ok()) return ToGrpc(found.status());
  auto* img = reply->mutable_image();
  for (const auto& stored : images_->StoredImages()) {
    if (stored.digest != found->digest) continue;
    for (const auto& name : stored.names) img->add_names(name);
  }
  img->set_digest(found->digest);
  img->set_size_bytes(found->size_bytes);
  const image::ImageConfig& c = found->config;
  reply->mutable_entrypoint()->Assign(c.entrypoint.begin(), c.entrypoint.end());
  reply->mutable_cmd()->Assign(c.cmd.begin(), c.cmd.end());
  reply->mutable_env()->Assign(c.env.begin(), c.env.end());
  reply->set_user(c.user);
  reply->set_working_dir(c.working_dir);
  reply->mutable_exposed_ports()->Assign(c.exposed_ports.begin(), c.exposed_ports.end());
  reply->set_os(c.os);
  reply->set_architecture(c.architecture);
  reply->set_layers(static_cast<int32_t>(found->layers.size()));
  return grpc::Status::OK;
}

}  // namespace mkube::agent::server
