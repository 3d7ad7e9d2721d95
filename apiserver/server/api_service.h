#pragma once

#include <atomic>
#include <chrono>

#include "apiserver/auth/auth.h"
#include "apiserver/registry/registry.h"
#include "apiserver/server/gate.h"
#include "apiserver/server/metrics.h"
#include "apiserver/server/request_metrics.h"
#include "apiserver/server/sized_writes.h"
#include "apiserver/server/watch_stream.h"
#include "base/executor.h"
#include "proto/apiserver/apiserver.grpc.pb.h"

namespace mkube::apiserver::server {

// The gRPC front of the registry: authenticate, authorize, call the registry, map errors.
struct ServiceOptions {
  size_t watch_queue = 10000;  // events one watch may have waiting before it is cut off
  // Watch writes start in rounds at most this far apart: a busy watch sends one message
  // per round with all its waiting events.
  std::chrono::milliseconds watch_coalesce{10};
  size_t workers = 16;       // threads for request work
  // Requests that may wait for a worker; past it a request is refused at once with
  // RESOURCE_EXHAUSTED (Kubernetes' 429), "Too many requests, please try again later."
  size_t max_waiting_requests = Executor::kDefaultMaxWaiting;
  size_t watch_threads = 1;  // threads that serve watches, each with its own calls
  // The store's --max-request-bytes: a write the store would refuse for its size is refused
  // before it is sent, in etcd's words (see SizedWrites).
  size_t store_max_request_bytes = kDefaultStoreMaxRequestBytes;
};

// Every method but Watch is a callback method. Watch is a raw method served from a
// completion queue of its own (see WatchServer): its events go out as pre-encoded slices
// shared by every watcher.
using ApiServiceBase = Api::WithRawMethod_Watch<Api::WithCallbackMethod_Create<
    Api::WithCallbackMethod_Get<Api::WithCallbackMethod_List<Api::WithCallbackMethod_Update<
        Api::WithCallbackMethod_Patch<Api::WithCallbackMethod_Delete<Api::Service>>>>>>>;

class ApiService final : public ApiServiceBase {
 public:
  // `metrics` serves metrics.k8s.io (absent: not served).
  ApiService(registry::Registry* registry, const auth::TokenAuthenticator* authn,
             ServiceOptions options = {}, MetricsApi* metrics = nullptr);

  // Registers the service and the watches' completion queues with `builder`; once the
  // server is built and started, StartWatches. The gRPC server must shut down before the service
  // is destroyed.
  void Register(grpc::ServerBuilder* builder);
  void StartWatches();

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

 private:
  // Authenticates the caller and checks `a`; fills a.pod_node for node callers on pods.
  absl::Status Check(grpc::ServerContextBase* ctx, auth::Attributes a);
  // Check for an update, without reading the store: for a node caller on pods, what cannot
  // be checked before the pod is read is returned, to be checked against the pod the write
  // replaces.
  absl::StatusOr<registry::Registry::Admit> CheckUpdate(grpc::ServerContextBase* ctx,
                                                        auth::Attributes a);
  // The kind, when `resource` is one metrics_ serves.
  const api::KindInfo* Measured(const std::string& resource) const;

  // A new Watch call: decodes its request (consuming `raw`), checks it and registers `sink`
  // with the registry's watch cache.
  absl::StatusOr<uint64_t> StartWatch(grpc::ServerContext* ctx, grpc::ByteBuffer* raw,
                                      cache::WatchSinkPtr sink);

  // Runs `work` off the gRPC thread and finishes the call with its status; refuses it at
  // once when too many requests wait for a worker. Both count the call as `labels` say.
  grpc::ServerUnaryReactor* Offload(grpc::CallbackServerContext* ctx,
                                    const RequestMetrics::Labels& labels,
                                    std::function<absl::Status()> work);
  // Runs `start` on the gRPC thread, for work that does not block (it hands the store's
  // answer, when it comes, to the Done it is given); the call ends with that answer. As many
  // such requests may be in flight as may be at the workers or waiting for them; more are
  // refused at once.
  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* ctx, ObjectReply* resp,
                                   const RequestMetrics::Labels& labels,
                                   const std::function<void(registry::Registry::Done)>& start);
  // Finishes a call with `st`, counted.
  void Finish(grpc::ServerUnaryReactor* reactor, const RequestMetrics::Labels& labels,
              std::chrono::steady_clock::time_point start, const absl::Status& st);

  registry::Registry* registry_;
  SizedWrites writes_;  // the registry's creates, updates and patches
  MetricsApi* metrics_;
  Gate gate_;
  ServiceOptions options_;
  Executor executor_;
  std::atomic<size_t> in_flight_{0};  // requests in Answer
  RequestMetrics requests_{&metrics::Registry::Default()};
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> watch_cqs_;
  WatchServer watches_;
};

}  // namespace mkube::apiserver::server
