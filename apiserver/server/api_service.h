#pragma once

#include "apiserver/auth/auth.h"
#include "apiserver/registry/registry.h"
#include "apiserver/server/executor.h"
#include "apiserver/server/watch_stream.h"
#include "proto/apiserver/apiserver.grpc.pb.h"

namespace mkube::apiserver::server {

// The gRPC front of the registry: authenticate, authorize, call the registry, map errors.
struct ServiceOptions {
  size_t watch_queue = 10000;  // events one watch may have waiting before it is cut off
  // Watch writes start in rounds at most this far apart: a busy watch sends one message
  // per round with all its waiting events.
  std::chrono::milliseconds watch_coalesce{10};
  size_t workers = 16;  // threads for request work
};

// Watch is a raw method: its events go out as pre-encoded slices shared by every watcher.
class ApiService final : public Api::WithRawCallbackMethod_Watch<Api::CallbackService> {
 public:
  ApiService(registry::Registry* registry, const auth::TokenAuthenticator* authn,
             ServiceOptions options = {})
      : registry_(registry),
        authn_(authn),
        options_(options),
        executor_(options.workers),
        flusher_(options.watch_coalesce) {}

  grpc::ServerUnaryReactor* Create(grpc::CallbackServerContext* ctx, const CreateRequest* req,
                                   ObjectReply* resp) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const GetRequest* req,
                                ObjectReply* resp) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* ctx, const ListRequest* req,
                                 ListReply* resp) override;
  grpc::ServerUnaryReactor* Update(grpc::CallbackServerContext* ctx, const UpdateRequest* req,
                                   ObjectReply* resp) override;
  grpc::ServerUnaryReactor* Patch(grpc::CallbackServerContext* ctx, const PatchRequest* req,
                                  ObjectReply* resp) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx, const DeleteRequest* req,
                                   ObjectReply* resp) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Watch(grpc::CallbackServerContext* ctx,
                                                    const grpc::ByteBuffer* req) override;

 private:
  // Authenticates the caller and checks `a`; fills a.pod_node for node callers on pods.
  absl::Status Check(grpc::CallbackServerContext* ctx, auth::Attributes a);

  // Runs `work` off the gRPC thread and finishes the call with its status.
  grpc::ServerUnaryReactor* Offload(grpc::CallbackServerContext* ctx,
                                    std::function<absl::Status()> work);

  registry::Registry* registry_;
  const auth::TokenAuthenticator* authn_;
  ServiceOptions options_;
  Executor executor_;
  WatchFlusher flusher_;
};

}  // namespace mkube::apiserver::server
