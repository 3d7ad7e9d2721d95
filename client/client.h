#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "proto/apiserver/apiserver.grpc.pb.h"
#include "proto/grpc_status.h"

namespace mkube::client {

// The receive window a client announces for each of its streams. gRPC starts streams at 64 KiB
// and grows windows only as it measures the connection, so a connection carrying many watches
// is throttled by flow control for its first seconds (watch latency of 0.5-1 s then, measured
// with 1000 watchers); this is the window Kubernetes' own Go clients announce per stream.
inline constexpr int kStreamWindowBytes = 4 << 20;

struct ClientOptions {
  std::string address;
  std::string token;
  // PEM of the CA that signed the apiserver's certificate; empty: plaintext.
  std::string ca_pem;
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  // Attempts for reads when the apiserver is unavailable (writes are never repeated).
  int read_attempts = 5;
  // A connection of its own instead of the one shared by every client of the same address.
  bool own_connection = false;
  // Calls made while the apiserver is being reconnected to wait for it (within `timeout`)
  // rather than failing at once. A long-lived client wants this: gRPC reads a new
  // connection's handshake only while some call of the process waits, so a client whose
  // calls all fail at once (after a restart of the apiserver) reconnects seconds late, up to
  // gRPC's 20 s connect timeout, however often it is called. mkubectl, which lives for one
  // command, fails at once.
  bool wait_for_ready = false;
};

// A server stream of watch events; Read blocks, false at the end (then Finish()).
class WatchStream {
 public:
  virtual ~WatchStream() = default;
  // The next event, in order.
  bool Read(apiserver::WatchEvent* ev) {
    while (next_ == batch_.events_size()) {
      if (!ReadBatch(&batch_)) return false;
      next_ = 0;
    }
    ev->Swap(batch_.mutable_events(next_++));
    return true;
  }
  // The next message: whatever events were waiting for this stream on the server.
  virtual bool ReadBatch(apiserver::WatchBatch* batch) = 0;
  // Why the stream ended, once Read or ReadBatch said it has.
  virtual absl::Status Finish() = 0;
  // Ends the stream from any thread; a blocked Read returns false.
  virtual void Cancel() = 0;

 private:
  apiserver::WatchBatch batch_;
  int next_ = 0;
};
using WatchStreamPtr = std::unique_ptr<WatchStream>;

// The typed client of the mkube API, as client-go's clientset: objects are the kinds'
// protobuf messages. GrpcClient talks to an apiserver; client/testing/fake_client.h keeps
// objects in memory for unit tests. Every method may be called from any thread.
class ApiClient {
 public:
  virtual ~ApiClient() = default;

  template <typename T>
  absl::StatusOr<T> Get(const std::string& resource, const std::string& ns, const std::string& name,
                        const std::string& subresource = "") {
    apiserver::GetRequest req;
    req.set_resource(resource);
    req.set_namespace_(ns);
    req.set_name(name);
    req.set_subresource(subresource);
    return Parse<T>(GetRaw(req));
  }
  template <typename T>
  absl::StatusOr<T> Create(const std::string& resource, const std::string& ns, const T& obj,
                           const std::string& name = "", const std::string& subresource = "") {
    apiserver::CreateRequest req;
    req.set_resource(resource);
    req.set_namespace_(ns);
    req.set_name(name);
    req.set_subresource(subresource);
    req.set_object(obj.SerializeAsString());
    return Parse<T>(CreateRaw(req));
  }
  template <typename T>
  absl::StatusOr<T> Update(const std::string& resource, const std::string& ns, const T& obj,
                           const std::string& subresource = "") {
    apiserver::UpdateRequest req;
    req.set_resource(resource);
    req.set_namespace_(ns);
    req.set_subresource(subresource);
    req.set_object(obj.SerializeAsString());
    return Parse<T>(UpdateRaw(req));
  }
  template <typename T>
  absl::StatusOr<T> Patch(const std::string& resource, const std::string& ns,
                          const std::string& name, const std::string& merge_patch,
                          const std::string& subresource = "") {
    apiserver::PatchRequest req;
    req.set_resource(resource);
    req.set_namespace_(ns);
    req.set_name(name);
    req.set_subresource(subresource);
    req.set_merge_patch(merge_patch);
    return Parse<T>(PatchRaw(req));
  }

  virtual absl::StatusOr<std::string> GetRaw(const apiserver::GetRequest& req) = 0;
  virtual absl::StatusOr<std::string> CreateRaw(const apiserver::CreateRequest& req) = 0;
  // A create whose answer goes to `done` (once, on any thread; it must not block), so that
  // many can be in flight without a thread waiting for each. By default, made and answered
  // on the caller's thread.
  using RawDone = std::function<void(absl::StatusOr<std::string>)>;
  virtual void CreateRawAsync(const apiserver::CreateRequest& req, RawDone done) {
    done(CreateRaw(req));
  }
  virtual void UpdateRawAsync(const apiserver::UpdateRequest& req, RawDone done) {
    done(UpdateRaw(req));
  }
  virtual absl::StatusOr<std::string> UpdateRaw(const apiserver::UpdateRequest& req) = 0;
  virtual absl::StatusOr<std::string> PatchRaw(const apiserver::PatchRequest& req) = 0;
  virtual absl::StatusOr<std::string> Delete(const apiserver::DeleteRequest& req) = 0;
  virtual absl::StatusOr<apiserver::ListReply> List(const apiserver::ListRequest& req) = 0;
  // A watch; a stream that cannot be opened ends at once, its reason in Finish().
  virtual WatchStreamPtr Watch(const apiserver::WatchRequest& req) = 0;

 private:
  template <typename T>
  static absl::StatusOr<T> Parse(absl::StatusOr<std::string> bytes) {
    if (!bytes.ok()) return bytes.status();
    T obj;
    if (!obj.ParseFromString(*bytes)) return absl::DataLossError("cannot decode the reply");
    return obj;
  }
};

// The client over gRPC, to an apiserver.
class GrpcClient final : public ApiClient {
 public:
  explicit GrpcClient(ClientOptions options);

  absl::StatusOr<std::string> GetRaw(const apiserver::GetRequest& req) override;
  absl::StatusOr<std::string> CreateRaw(const apiserver::CreateRequest& req) override;
  void CreateRawAsync(const apiserver::CreateRequest& req, RawDone done) override;
  void UpdateRawAsync(const apiserver::UpdateRequest& req, RawDone done) override;
  absl::StatusOr<std::string> UpdateRaw(const apiserver::UpdateRequest& req) override;
  absl::StatusOr<std::string> PatchRaw(const apiserver::PatchRequest& req) override;
  absl::StatusOr<std::string> Delete(const apiserver::DeleteRequest& req) override;
  absl::StatusOr<apiserver::ListReply> List(const apiserver::ListRequest& req) override;
  WatchStreamPtr Watch(const apiserver::WatchRequest& req) override;

  // pods/log and pods/exec. `ctx` gets the token and no deadline: these last as long as the
  // caller wants (cancel through ctx).
  std::unique_ptr<grpc::ClientReader<agent::LogChunk>> Logs(grpc::ClientContext* ctx,
                                                            const agent::LogRequest& req);
  std::unique_ptr<grpc::ClientReaderWriter<agent::ExecInput, agent::ExecOutput>> Exec(
      grpc::ClientContext* ctx);

 private:
  void Prepare(grpc::ClientContext* ctx) const;

  ClientOptions options_;
  std::unique_ptr<apiserver::Api::Stub> stub_;
  std::unique_ptr<apiserver::PodStreams::Stub> streams_;
};

}  // namespace mkube::client
