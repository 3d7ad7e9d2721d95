#pragma once

#include "apiserver/auth/auth.h"
#include "apiserver/server/executor.h"
#include "apiserver/registry/registry.h"
#include "proto/apiserver/apiserver.grpc.pb.h"

namespace mkube::apiserver::server {

// The gRPC front of the registry: authenticate, authorize, call the registry, map errors.
class ApiService final : public Api::CallbackService {
 public:
  ApiService(registry::Registry* registry, const auth::TokenAuthenticator* authn,
             size_t watch_queue = 10000, size_t workers = 16)
      : registry_(registry), authn_(authn), watch_queue_(watch_queue), executor_(workers) {}

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
  grpc::ServerWriteReactor<WatchEvent>* Watch(grpc::CallbackServerContext* ctx,
                                              const WatchRequest* req) override;

 private:
  // Authenticates the caller and checks `a`; fills a.pod_node for node callers on pods.
  absl::Status Check(grpc::CallbackServerContext* ctx, auth::Attributes a);

  // Runs `work` off the gRPC thread and finishes the call with its status.
  grpc::ServerUnaryReactor* Offload(grpc::CallbackServerContext* ctx,
                                    std::function<absl::Status()> work);

  registry::Registry* registry_;
  const auth::TokenAuthenticator* authn_;
  size_t watch_queue_;
  Executor executor_;
};

}  // namespace mkube::apiserver::server
