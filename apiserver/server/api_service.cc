#include "apiserver/server/api_service.h"

#include <deque>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "api/object.h"
#include "proto/api/core.pb.h"

namespace mkube::apiserver::server {
namespace {

grpc::Status ToGrpc(const absl::Status& st) {
  if (st.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(st.code()), std::string(st.message()));
}

template <typename ReplyT>
absl::Status Fill(absl::StatusOr<std::string> r, ReplyT* resp) {
  if (r.ok()) resp->set_object(std::move(*r));
  return r.status();
}

std::string Canonical(const std::string& resource) {
  const api::KindInfo* k = api::FindResource(resource);
  return k ? k->resource : resource;
}

// The write side of one watch: a bounded queue with one write in flight, as in the store.
class Sink final : public cache::WatchSink {
 public:
  Sink(grpc::ServerWriteReactor<WatchEvent>* reactor, size_t limit)
      : reactor_(reactor), limit_(limit) {}

  bool Push(const cache::Event& e) override {
    WatchEvent out;
    out.set_type(cache::EventTypeName(e.type));
    out.set_resource_version(std::to_string(e.revision));
    if (e.entry) out.set_object(e.entry->bytes);
    const WatchEvent* start = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return true;
      if (queue_.size() >= limit_) return false;
      queue_.push_back(std::move(out));
      if (!writing_) {
        writing_ = true;
        start = &queue_.front();
      }
    }
    if (start) reactor_->StartWrite(start);
    return true;
  }

  void Close(const absl::Status& why) override {
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return;
      closed_ = true;
      status_ = ToGrpc(why);
      finish = !writing_ && !finished_;
      if (finish) finished_ = true;
    }
    if (finish) reactor_->Finish(status_);
  }

  void WriteDone(bool ok) {
    const WatchEvent* next = nullptr;
    bool more = false;  // more waiting behind next: let gRPC batch them into one flush
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.pop_front();
      if (!ok) closed_ = true;
      if (!closed_ && !queue_.empty()) {
        next = &queue_.front();
        more = queue_.size() > 1;
      } else {
        writing_ = false;
        finish = closed_ && !finished_;
        if (finish) finished_ = true;
      }
    }
    if (next) reactor_->StartWrite(next, more ? grpc::WriteOptions().set_buffer_hint() : grpc::WriteOptions());
    if (finish) reactor_->Finish(status_);
  }

 private:
  grpc::ServerWriteReactor<WatchEvent>* reactor_;
  const size_t limit_;
  std::mutex mu_;
  std::deque<WatchEvent> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ = grpc::Status::OK;
};

class WatchReactor final : public grpc::ServerWriteReactor<WatchEvent> {
 public:
  WatchReactor(registry::Registry* registry, size_t limit)
      : registry_(registry), sink_(std::make_shared<Sink>(this, limit)) {}

  void Start(const WatchRequest& req) {
    auto id = registry_->Watch(req, sink_);
    if (!id.ok()) {
      sink_->Close(id.status());
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    id_ = *id;
  }
  void Fail(const absl::Status& st) { sink_->Close(st); }

  void OnWriteDone(bool ok) override { sink_->WriteDone(ok); }
  void OnCancel() override {
    Unwatch();
    sink_->Close(absl::CancelledError("watch canceled"));
  }
  void OnDone() override {
    Unwatch();
    delete this;
  }

 private:
  void Unwatch() {
    uint64_t id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = std::exchange(id_, 0);
    }
    if (id) registry_->Unwatch(id);
  }
  registry::Registry* registry_;
  std::shared_ptr<Sink> sink_;
  std::mutex mu_;
  uint64_t id_ = 0;
};

}  // namespace

absl::Status ApiService::Check(grpc::CallbackServerContext* ctx, auth::Attributes a) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  std::string header = it == md.end() ? "" : std::string(it->second.data(), it->second.size());
  auto caller = authn_->Authenticate(header);
  if (!caller.ok()) return caller.status();
  a.resource = Canonical(a.resource);
  if (a.resource == "pods" && !a.name.empty() &&
      (a.verb == "update" || a.verb == "patch" || a.verb == "delete")) {
    // NodeRestriction needs to know where the pod runs.
    GetRequest g;
    g.set_resource("pods");
    g.set_namespace_(a.ns);
    g.set_name(a.name);
    if (auto bytes = registry_->Get(g); bytes.ok()) {
      api::Pod pod;
      if (pod.ParseFromString(*bytes)) a.pod_node = pod.spec().node_name();
    }
  }
  return auth::Authorize(*caller, a);
}

grpc::ServerUnaryReactor* ApiService::Offload(grpc::CallbackServerContext* ctx,
                                              std::function<absl::Status()> work) {
  auto* reactor = ctx->DefaultReactor();
  executor_.Run([reactor, work = std::move(work)] { reactor->Finish(ToGrpc(work())); });
  return reactor;
}

grpc::ServerUnaryReactor* ApiService::Create(grpc::CallbackServerContext* ctx,
                                             const CreateRequest* req, ObjectReply* resp) {
  return Offload(ctx, [=, this]() -> absl::Status {
    if (auto st = Check(ctx, {"create", req->resource(), req->subresource(), req->namespace_(), req->name(), ""}); !st.ok()) {
      return st;
    }
    return Fill(registry_->Create(*req), resp);
  });
}

grpc::ServerUnaryReactor* ApiService::Get(grpc::CallbackServerContext* ctx, const GetRequest* req,
                                          ObjectReply* resp) {
  return Offload(ctx, [=, this]() -> absl::Status {
    if (auto st = Check(ctx, {"get", req->resource(), req->subresource(), req->namespace_(), req->name(), ""}); !st.ok()) {
      return st;
    }
    return Fill(registry_->Get(*req), resp);
  });
}

grpc::ServerUnaryReactor* ApiService::List(grpc::CallbackServerContext* ctx,
                                           const ListRequest* req, ListReply* resp) {
  return Offload(ctx, [=, this]() -> absl::Status {
    if (auto st = Check(ctx, {"list", req->resource(), "", req->namespace_(), "", ""}); !st.ok()) {
      return st;
    }
    auto r = registry_->List(*req);
    if (r.ok()) *resp = std::move(*r);
    return r.status();
  });
}

grpc::ServerUnaryReactor* ApiService::Update(grpc::CallbackServerContext* ctx,
                                             const UpdateRequest* req, ObjectReply* resp) {
  std::unique_ptr<google::protobuf::Message> obj;
  std::string name;
  if (const api::KindInfo* k = api::FindResource(req->resource())) {
    obj = k->New();
    if (obj->ParseFromString(req->object())) name = api::MetaOf(*obj).name();
  }
  return Offload(ctx, [=, this]() -> absl::Status {
    if (auto st = Check(ctx, {"update", req->resource(), req->subresource(), req->namespace_(), name, ""}); !st.ok()) {
      return st;
    }
    return Fill(registry_->Update(*req), resp);
  });
}

grpc::ServerUnaryReactor* ApiService::Patch(grpc::CallbackServerContext* ctx,
                                            const PatchRequest* req, ObjectReply* resp) {
  return Offload(ctx, [=, this]() -> absl::Status {
    if (auto st = Check(ctx, {"patch", req->resource(), req->subresource(), req->namespace_(), req->name(), ""}); !st.ok()) {
      return st;
    }
    return Fill(registry_->Patch(*req), resp);
  });
}

grpc::ServerUnaryReactor* ApiService::Delete(grpc::CallbackServerContext* ctx,
                                             const DeleteRequest* req, ObjectReply* resp) {
  return Offload(ctx, [=, this]() -> absl::Status {
    if (auto st = Check(ctx, {"delete", req->resource(), "", req->namespace_(), req->name(), ""}); !st.ok()) {
      return st;
    }
    return Fill(registry_->Delete(*req), resp);
  });
}

grpc::ServerWriteReactor<WatchEvent>* ApiService::Watch(grpc::CallbackServerContext* ctx,
                                                        const WatchRequest* req) {
  auto* reactor = new WatchReactor(registry_, watch_queue_);
  if (auto st = Check(ctx, {"watch", req->resource(), "", req->namespace_(), "", ""}); !st.ok()) {
    reactor->Fail(st);
  } else {
    reactor->Start(*req);
  }
  return reactor;
}

}  // namespace mkube::apiserver::server
