#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "api/kinds.h"
#include "apiserver/cache/watch_cache.h"
#include "apiserver/storage/store_client.h"
#include "proto/api/core.pb.h"
#include "proto/apiserver/apiserver.pb.h"

namespace mkube::apiserver::registry {

// Who is asking, once authenticated.
struct Caller {
  std::string user;
  std::vector<std::string> groups;
};

// Request handling independent of the transport: defaulting, validation, optimistic
// concurrency and storage. Reads of single objects go to the store; lists and watches are
// served by the watch cache at a revision at least as new as the store's.
struct RegistryOptions {
  // DefaultTolerationSeconds: how long pods tolerate a not-ready or unreachable node.
  int64_t default_not_ready_toleration_seconds = 300;
  int64_t default_unreachable_toleration_seconds = 300;
};

class Registry {
 public:
  Registry(storage::StoreClient* store, cache::WatchCache* cache, RegistryOptions options = {});

  // Creates the namespaces every cluster has.
  absl::Status Bootstrap();

  absl::StatusOr<std::string> Create(const CreateRequest& req);
  absl::StatusOr<std::string> Get(const GetRequest& req);
  // Get, decoded as the kind's message.
  template <typename T>
  absl::StatusOr<T> GetAs(const std::string& resource, const std::string& ns,
                          const std::string& name) {
    GetRequest g;
    g.set_resource(resource);
    g.set_namespace_(ns);
    g.set_name(name);
    auto bytes = Get(g);
    if (!bytes.ok()) return bytes.status();
    T obj;
    if (!obj.ParseFromString(*bytes)) return absl::InternalError("cannot decode the stored object");
    return obj;
  }
  absl::StatusOr<ListReply> List(const ListRequest& req);
  absl::StatusOr<std::string> Update(const UpdateRequest& req);
  absl::StatusOr<std::string> Patch(const PatchRequest& req);
  absl::StatusOr<std::string> Delete(const DeleteRequest& req);
  absl::StatusOr<uint64_t> Watch(const WatchRequest& req, cache::WatchSinkPtr sink);
  void Unwatch(uint64_t id) { cache_->Unwatch(id); }

  // "pods", or "deployments.apps": how Kubernetes names a resource in messages.
  static std::string QualifiedResource(const api::KindInfo& kind);

 private:
  absl::StatusOr<const api::KindInfo*> Resolve(const std::string& resource) const;
  absl::StatusOr<cache::EntryPtr> Current(const api::KindInfo& kind, const std::string& key,
                                          const std::string& name);
  // A read-modify-write of the object at `key`, as Kubernetes' GuaranteedUpdate starts from
  // its watch cache: `attempt` runs on the cache's copy, and only if that fails (a stale copy
  // fails the write's revision check, or a check against old state) again on the store's, so
  // every answer but success comes from the current object. A store that did not answer
  // (unavailable, deadline) is not written to again. Dry runs read the store.
  absl::StatusOr<std::string> ReadModifyWrite(
      const api::KindInfo& kind, const std::string& key, const std::string& name, bool dry_run,
      const std::function<absl::StatusOr<std::string>(const cache::EntryPtr&)>& attempt);
  absl::StatusOr<std::string> Store(const api::KindInfo& kind, const std::string& key,
                                    const std::string& name, int64_t revision,
                                    google::protobuf::Message& obj);
  // Deletes the object at `key` if its revision is still `revision`; returns `obj` as deleted.
  absl::StatusOr<std::string> Remove(const api::KindInfo& kind, const std::string& key,
                                     const std::string& name, int64_t revision,
                                     const google::protobuf::Message& obj);
  static absl::Status NoSubresource(const api::KindInfo& kind, const std::string& sub);
  absl::StatusOr<std::string> CreateSubresource(const api::KindInfo& kind,
                                                const CreateRequest& req);
  // pods/eviction: a graceful delete that the pod's PodDisruptionBudget may refuse (429).
  absl::StatusOr<std::string> Evict(const api::KindInfo& kind, const CreateRequest& req);
  // Takes one disruption from the budget that covers `pod`, if one does; the refusal when
  // none is left.
  absl::Status ChargeDisruptionBudget(const api::Pod& pod, bool dry_run);
  static absl::StatusOr<std::string> ScaleOf(const api::KindInfo& kind, const cache::Entry& e);
  absl::StatusOr<std::string> UpdateScale(const api::KindInfo& kind, const UpdateRequest& req);
  absl::StatusOr<cache::Filter> MakeFilter(const api::KindInfo& kind, const std::string& ns,
                                           const std::string& labels,
                                           const std::string& fields) const;

  storage::StoreClient* store_;
  cache::WatchCache* cache_;
  const RegistryOptions options_;
};

std::string Key(const api::KindInfo& kind, const std::string& ns, const std::string& name);

}  // namespace mkube::apiserver::registry
