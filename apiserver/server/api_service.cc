#include "apiserver/server/api_service.h"

#include <algorithm>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "api/object.h"
#include "apiserver/server/metadata.h"
#include "base/status.h"
#include "proto/api/core.pb.h"
#include "proto/grpc_status.h"

namespace mkube::apiserver::server {
namespace {

// Kubernetes' answer when its max-in-flight filter refuses a request.
constexpr char kTooManyRequests[] = "Too many requests, please try again later.";

template <typename ReplyT>
absl::Status Fill(absl::StatusOr<std::string> r, ReplyT* resp) {
  if (r.ok()) resp->set_object(std::move(*r));
  return r.status();
}

// The object's name a create names: in the request for subresources, else in the object
// (authorization needs it: a node may create only its own Node and Lease).
std::string NameOf(const CreateRequest& req) {
  if (!req.name().empty() || !req.subresource().empty()) return req.name();
  const api::KindInfo* k = api::FindResource(req.resource());
  if (!k) return "";
  auto obj = k->New();
  return obj->ParseFromString(req.object()) ? api::MetaOf(*obj).name() : "";
}

}  // namespace

const api::KindInfo* ApiService::Measured(const std::string& resource) const {
  const api::KindInfo* k = api::FindResource(resource);
  return k && k->measured && metrics_ ? k : nullptr;
}

ApiService::ApiService(registry::Registry* registry, const auth::TokenAuthenticator* authn,
                       ServiceOptions options, MetricsApi* metrics)
    : registry_(registry),
      writes_(registry, options.store_max_request_bytes),
      metrics_(metrics),
      gate_(registry, authn),
      options_(options),
      executor_(options.workers, options.max_waiting_requests),
      watches_(options.watch_coalesce, options.watch_queue,
               {.request = [this](grpc::ServerContext* ctx, grpc::ByteBuffer* req,
                                  grpc::ServerAsyncWriter<grpc::ByteBuffer>* writer,
                                  grpc::ServerCompletionQueue* cq,
                                  void* tag) { RequestWatch(ctx, req, writer, cq, cq, tag); },
                .start = [this](grpc::ServerContext* ctx, grpc::ByteBuffer* raw,
                                cache::WatchSinkPtr sink) { return StartWatch(ctx, raw, sink); },
                .stop = [this](uint64_t id) { registry_->Unwatch(id); }}) {}

void ApiService::Register(grpc::ServerBuilder* builder) {
  builder->RegisterService(this);
  for (size_t i = 0; i < std::max<size_t>(options_.watch_threads, 1); ++i) {
    watch_cqs_.push_back(builder->AddCompletionQueue(/*is_frequently_polled=*/false));
  }
}

void ApiService::StartWatches() { watches_.Start(std::move(watch_cqs_)); }

absl::Status ApiService::Check(grpc::ServerContextBase* ctx, auth::Attributes a) {
  MKUBE_ASSIGN_OR_RETURN(auto caller, gate_.Authenticate(AuthorizationHeader(*ctx)));
  return gate_.Check(caller, std::move(a));
}

absl::StatusOr<registry::Registry::Admit> ApiService::CheckUpdate(grpc::ServerContextBase* ctx,
                                                                  auth::Attributes a) {
  MKUBE_ASSIGN_OR_RETURN(auto caller, gate_.Authenticate(AuthorizationHeader(*ctx)));
  return gate_.CheckUpdate(caller, std::move(a));
}

void ApiService::Finish(grpc::ServerUnaryReactor* reactor, const RequestMetrics::Labels& labels,
                        std::chrono::steady_clock::time_point start, const absl::Status& st) {
  // As the HTTP API answers: a create that succeeds is 201.
  const int code = st.ok() && labels.verb == "POST" ? 201 : HttpCode(st);
  requests_.Record(labels, code,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  reactor->Finish(ToGrpc(st));
}

grpc::ServerUnaryReactor* ApiService::Answer(
    grpc::CallbackServerContext* ctx, ObjectReply* resp, const RequestMetrics::Labels& labels,
    const std::function<void(registry::Registry::Done)>& start) {
  auto* reactor = ctx->DefaultReactor();
  const auto began = std::chrono::steady_clock::now();
  if (in_flight_.fetch_add(1) >= options_.workers + options_.max_waiting_requests) {
    in_flight_.fetch_sub(1);
    Finish(reactor, labels, began, absl::ResourceExhaustedError(kTooManyRequests));
    return reactor;
  }
  start([this, reactor, resp, labels, began](absl::StatusOr<std::string> r) {
    in_flight_.fetch_sub(1);
    Finish(reactor, labels, began, Fill(std::move(r), resp));
  });
  return reactor;
}

grpc::ServerUnaryReactor* ApiService::Offload(grpc::CallbackServerContext* ctx,
                                              const RequestMetrics::Labels& labels,
                                              std::function<absl::Status()> work) {
  auto* reactor = ctx->DefaultReactor();
  const auto began = std::chrono::steady_clock::now();
  const bool accepted = executor_.Run([this, ctx, reactor, labels, began, work = std::move(work)] {
    // A caller that gave up while the request waited for a worker gets nothing done: a
    // write it no longer waits for would land after it was told it failed.
    if (ctx->IsCancelled() || std::chrono::system_clock::now() >= ctx->deadline()) {
      Finish(reactor, labels, began,
             absl::DeadlineExceededError("the request's deadline passed before it was handled"));
      return;
    }
    Finish(reactor, labels, began, work());
  });
  if (!accepted) Finish(reactor, labels, began, absl::ResourceExhaustedError(kTooManyRequests));
  return reactor;
}

grpc::ServerUnaryReactor* ApiService::Create(grpc::CallbackServerContext* ctx,
                                             const CreateRequest* req, ObjectReply* resp) {
  const auth::Attributes a{"create",          req->resource(), req->subresource(),
                           req->namespace_(), NameOf(*req),    ""};
  auto labels = RequestMetrics::For("POST", req->resource(), req->subresource(), req->namespace_(),
                                    req->subresource().empty() ? "" : req->name());
  labels.dry_run = req->dry_run();
  if (registry::Registry::Blocks(*req)) {
    return Offload(ctx, labels, [=, this]() -> absl::Status {
      MKUBE_RETURN_IF_ERROR(Check(ctx, a));
      return Fill(writes_.Create(*req), resp);
    });
  }
  return Answer(ctx, resp, labels, [=, this](registry::Registry::Done done) {
    if (auto st = Check(ctx, a); !st.ok()) return done(st);
    writes_.Create(*req, std::move(done));
  });
}

grpc::ServerUnaryReactor* ApiService::Get(grpc::CallbackServerContext* ctx, const GetRequest* req,
                                          ObjectReply* resp) {
  const auth::Attributes a{
      "get", req->resource(), req->subresource(), req->namespace_(), req->name(), ""};
  const auto labels = RequestMetrics::For("GET", req->resource(), req->subresource(),
                                          req->namespace_(), req->name());
  if (const api::KindInfo* k = Measured(req->resource())) {  // asks the agents: a worker waits
    return Offload(ctx, labels, [=, this]() -> absl::Status {
      MKUBE_RETURN_IF_ERROR(Check(ctx, a));
      return Fill(metrics_->Get(*k, req->namespace_(), req->name()), resp);
    });
  }
  // A read of the store answered where it arrives: a lease's renewal does not queue behind
  // the lists and deletes that wait for workers.
  return Answer(ctx, resp, labels, [=, this](registry::Registry::Done done) {
    if (auto st = Check(ctx, a); !st.ok()) return done(st);
    registry_->Get(*req, std::move(done));
  });
}

grpc::ServerUnaryReactor* ApiService::List(grpc::CallbackServerContext* ctx, const ListRequest* req,
                                           ListReply* resp) {
  const auto labels = RequestMetrics::For("LIST", req->resource(), "", req->namespace_(), "");
  return Offload(ctx, labels, [=, this]() -> absl::Status {
    if (auto st = Check(ctx, {"list", req->resource(), "", req->namespace_(), "", ""}); !st.ok()) {
      return st;
    }
    const api::KindInfo* k = Measured(req->resource());
    auto r = k ? metrics_->List(*k, *req) : registry_->List(*req);
    if (r.ok()) *resp = std::move(*r);
    return r.status();
  });
}

grpc::ServerUnaryReactor* ApiService::Update(grpc::CallbackServerContext* ctx,
                                             const UpdateRequest* req, ObjectReply* resp) {
  // Authorization needs the object's name, which only its body carries.
  std::string name;
  if (const api::KindInfo* k = api::FindResource(req->resource())) {
    auto obj = k->New();
    if (obj->ParseFromString(req->object())) name = api::MetaOf(*obj).name();
  }
  const auth::Attributes a{"update", req->resource(), req->subresource(), req->namespace_(), name,
                           ""};
  auto labels =
      RequestMetrics::For("PUT", req->resource(), req->subresource(), req->namespace_(), name);
  labels.dry_run = req->dry_run();
  if (registry::Registry::Blocks(*req)) {
    return Offload(ctx, labels, [=, this]() -> absl::Status {
      MKUBE_RETURN_IF_ERROR(Check(ctx, a));
      return Fill(writes_.Update(*req), resp);
    });
  }
  return Answer(ctx, resp, labels, [=, this](registry::Registry::Done done) {
    auto admit = CheckUpdate(ctx, a);
    if (!admit.ok()) return done(admit.status());
    writes_.Update(*req, std::move(*admit), std::move(done));
  });
}

grpc::ServerUnaryReactor* ApiService::Patch(grpc::CallbackServerContext* ctx,
                                            const PatchRequest* req, ObjectReply* resp) {
  auto labels = RequestMetrics::For(req->patch_type() == "apply" ? "APPLY" : "PATCH",
                                    req->resource(), req->subresource(), req->namespace_(),
                                    req->name());
  labels.dry_run = req->dry_run();
  return Offload(ctx, labels, [=, this]() -> absl::Status {
    if (auto st = Check(ctx, {"patch", req->resource(), req->subresource(), req->namespace_(),
                              req->name(), ""});
        !st.ok()) {
      return st;
    }
    return Fill(writes_.Patch(*req), resp);
  });
}

grpc::ServerUnaryReactor* ApiService::Delete(grpc::CallbackServerContext* ctx,
                                             const DeleteRequest* req, ObjectReply* resp) {
  auto labels = RequestMetrics::For("DELETE", req->resource(), "", req->namespace_(), req->name());
  labels.dry_run = req->dry_run();
  return Offload(ctx, labels, [=, this]() -> absl::Status {
    if (auto st = Check(ctx, {"delete", req->resource(), "", req->namespace_(), req->name(), ""});
        !st.ok()) {
      return st;
    }
    return Fill(registry_->Delete(*req), resp);
  });
}

absl::StatusOr<uint64_t> ApiService::StartWatch(grpc::ServerContext* ctx, grpc::ByteBuffer* raw,
                                                cache::WatchSinkPtr sink) {
  WatchRequest req;
  if (!grpc::SerializationTraits<WatchRequest>::Deserialize(raw, &req).ok()) {
    return absl::InvalidArgumentError("cannot decode the watch request");
  }
  const auto labels = RequestMetrics::For("WATCH", req.resource(), "", req.namespace_(), "");
  absl::StatusOr<uint64_t> id;
  if (auto st = Check(ctx, {"watch", req.resource(), "", req.namespace_(), "", ""}); !st.ok()) {
    id = st;
  } else {
    id = registry_->Watch(req, std::move(sink));
  }
  requests_.Record(labels, HttpCode(id.status()), std::nullopt);  // long-running: not timed
  return id;
}

}  // namespace mkube::apiserver::server
