#pragma once

// Writes the store would refuse for their size, refused before they are sent.
//
// kube-apiserver lets etcd judge an object's size: a write over etcd's --max-request-bytes
// (1.5 MiB unless set) is answered "etcdserver: request is too large" (HTTP 500, no reason),
// once the request was authorized, admitted and validated. Here a request whose body comes
// near that limit is first made as a dry run, which does all of that and yields the object as
// it would be stored; when that object would make a store request over the limit, the write
// is refused in etcd's words and the store never sees it. The store's own refusals of a
// write for its size (its request limit, or its gRPC message limit, whose words are gRPC's
// internals) are answered in the same words.
#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "apiserver/registry/registry.h"

namespace mkube::apiserver::server {

// etcd's and mkube-store's --max-request-bytes unless set.
inline constexpr size_t kDefaultStoreMaxRequestBytes = 1536 * 1024;

class SizedWrites {
 public:
  SizedWrites(registry::Registry* registry, size_t store_max_request_bytes)
      : registry_(registry), store_max_request_bytes_(store_max_request_bytes) {}

  void Create(const CreateRequest& req, registry::Registry::Done done);
  absl::StatusOr<std::string> Create(const CreateRequest& req);
  void Update(const UpdateRequest& req, registry::Registry::Admit admit,
              registry::Registry::Done done);
  absl::StatusOr<std::string> Update(const UpdateRequest& req,
                                     registry::Registry::Admit admit = nullptr);
  absl::StatusOr<std::string> Patch(const PatchRequest& req);

  // A store's refusal of a write for its size as kube-apiserver answers it (UNKNOWN, for its
  // 500 without a reason: "etcdserver: request is too large"); any other status unchanged.
  static absl::Status Worded(const absl::Status& st);

 private:
  // Whether a request this large may make a write the store refuses.
  bool Near(size_t body_bytes) const;
  // OK when the store would take `object` (a dry run's answer) at its key.
  absl::Status Fits(const std::string& resource, const std::string& object) const;

  registry::Registry* registry_;
  size_t store_max_request_bytes_;
};

}  // namespace mkube::apiserver::server
