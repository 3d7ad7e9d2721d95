#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "api/kinds.h"
#include "apiserver/cache/watch_cache.h"
#include "apiserver/storage/storage.h"
#include "proto/api/apps.pb.h"
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
  // Where an answer goes when it is not waited for: called once, on the caller's thread or on
  // one of gRPC's (so it must not block).
  using Done = std::function<void(absl::StatusOr<std::string>)>;
  // Admission against the object a write replaces, as the write finds it (Kubernetes'
  // NodeRestriction checks where a pod is bound so): a refusal is the answer.
  using Admit = std::function<absl::Status(const google::protobuf::Message& current)>;

  Registry(storage::Storage* store, cache::WatchCache* cache, RegistryOptions options = {});

  // Creates the namespaces every cluster has.
  absl::Status Bootstrap();

  // Whether a request waits on the caller's thread for the store. The others (creates,
  // bindings, updates and status updates: the bulk of a cluster's writes) go to the store
  // without waiting when given a Done.
  static bool Blocks(const CreateRequest& req) {
    return !req.subresource().empty() && req.subresource() != "binding";
  }
  static bool Blocks(const UpdateRequest& req) { return req.subresource() == "scale"; }

  absl::StatusOr<std::string> Create(const CreateRequest& req);
  void Create(const CreateRequest& req, Done done);
  absl::StatusOr<std::string> Get(const GetRequest& req);
  // Reads the store without waiting.
  void Get(const GetRequest& req, Done done);
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
  // The same list as the cache's entries, for a transport that encodes them itself.
  absl::StatusOr<cache::WatchCache::ListResult> ListEntries(const ListRequest& req);
  absl::StatusOr<std::string> Update(const UpdateRequest& req, Admit admit = nullptr);
  void Update(const UpdateRequest& req, Admit admit, Done done);
  absl::StatusOr<std::string> Patch(const PatchRequest& req);
  absl::StatusOr<std::string> Delete(const DeleteRequest& req);
  absl::StatusOr<uint64_t> Watch(const WatchRequest& req, cache::WatchSinkPtr sink);
  void Unwatch(uint64_t id) { cache_->Unwatch(id); }

  // "pods", or "deployments.apps": how Kubernetes names a resource in messages.
  static std::string QualifiedResource(const api::KindInfo& kind);

 private:
  // A write decided on the current object: `object` put at `key` if the stored one is still at
  // `revision` (0: only if there is none), or removed from there; or, with nothing to write (a
  // dry run, a delete of what is being deleted already), `answer` as the reply.
  struct Write {
    const api::KindInfo* kind = nullptr;
    std::string key;
    std::string name;
    int64_t revision = 0;
    bool remove = false;
    std::shared_ptr<google::protobuf::Message> object;
    std::optional<std::string> answer;
  };
  // Decides a write on the object as it is now: a refusal, an answer, or what to store. It
  // checks every precondition the caller named each time, since it may run again.
  using Plan = std::function<absl::StatusOr<Write>(const cache::EntryPtr& current)>;
  // A read-modify-write in progress: the object's key, and its plan.
  struct Job {
    const api::KindInfo* kind;
    std::string key;
    std::string name;
    Plan plan;
  };
  using JobPtr = std::shared_ptr<const Job>;
  // Where a read-modify-write takes its first copy of the object. The watch cache's saves a
  // read, and Kubernetes' GuaranteedUpdate starts there too; a plan that must not answer from
  // a lagging copy without writing (a delete of an object being deleted) reads the store.
  enum class From { kCache, kStore };

  absl::StatusOr<const api::KindInfo*> Resolve(const std::string& resource) const;
  absl::StatusOr<cache::EntryPtr> Current(const api::KindInfo& kind, const std::string& key,
                                          const std::string& name);
  // The object a read of `key` found, or NotFound.
  static absl::StatusOr<cache::EntryPtr> Found(const api::KindInfo& kind, const std::string& key,
                                               const std::string& name,
                                               absl::StatusOr<etcdserverpb::RangeResponse> r);
  // A read-modify-write of the object at `key`, as Kubernetes' GuaranteedUpdate: `plan` runs
  // on the current object and its write is made if the object is still as planned on. A
  // refusal on the cache's copy is judged again on the store's; a write that lost to another
  // writer is planned again on what that one wrote, so nothing but a version or uid the
  // caller named (which the plan checks) or a real state conflict answers 409. A store that
  // did not answer (unavailable, deadline) is not written to again.
  void ReadModifyWrite(const api::KindInfo& kind, const std::string& key, const std::string& name,
                       From from, Plan plan, Done done);
  void ReadAndAttempt(JobPtr job, int attempt, Done done);
  void Attempt(JobPtr job, const cache::EntryPtr& current, bool cached, int attempt, Done done);
  // Makes a create (or answers at once) and tells `done` what came of it.
  void Execute(Write w, Done done);
  static etcdserverpb::TxnRequest TxnOf(const Write& w);
  static absl::StatusOr<std::string> Outcome(Write& w, absl::StatusOr<etcdserverpb::TxnResponse> r);
  // Runs `start` and waits for the answer it hands to its Done.
  static absl::StatusOr<std::string> Wait(const std::function<void(Done)>& start);
  // The plan of an update of `current` to `obj` (`want`: the resourceVersion the caller
  // named, 0 for none; `status`: the status subresource; `manager`: the field manager whose
  // changes managedFields records, none when empty).
  static absl::StatusOr<Write> PlanUpdate(const api::KindInfo* kind, const std::string& key,
                                          const google::protobuf::Message& obj,
                                          const std::string& written, int64_t want, bool status,
                                          bool dry_run, const Admit& admit,
                                          const cache::Entry& current,
                                          const std::string& manager = "");
  // The object a create makes, defaulted and validated (an answer for a dry run).
  absl::StatusOr<Write> PlanCreate(const api::KindInfo& kind, const CreateRequest& req) const;
  void Bind(const api::KindInfo& kind, const CreateRequest& req, Done done);
  static absl::Status NoSubresource(const api::KindInfo& kind, const std::string& sub);
  absl::StatusOr<std::string> CreateSubresource(const api::KindInfo& kind,
                                                const CreateRequest& req);
  // pods/eviction: a graceful delete that the pod's PodDisruptionBudget may refuse (429).
  absl::StatusOr<std::string> Evict(const api::KindInfo& kind, const CreateRequest& req);
  // Takes one disruption from the budget that covers `pod`, if one does; the refusal when
  // none is left.
  absl::Status ChargeDisruptionBudget(const api::Pod& pod, bool dry_run);
  static absl::StatusOr<api::Scale> ScaleOf(const api::KindInfo& kind,
                                            const google::protobuf::Message& obj);
  // The plan of setting the replicas of `current` as `scale` asks (`manager`: whose change
  // managedFields records, through the scale subresource; none when empty).
  static absl::StatusOr<Write> PlanScale(const api::KindInfo* kind, const std::string& key,
                                         const api::Scale& scale, bool dry_run,
                                         const cache::Entry& current, const std::string& manager);
  // Makes a scale plan and answers with the Scale of what it wrote.
  absl::StatusOr<std::string> ScaleWrite(const api::KindInfo& kind, const std::string& ns,
                                         const std::string& name, Plan plan);
  absl::StatusOr<std::string> UpdateScale(const api::KindInfo& kind, const UpdateRequest& req);
  absl::StatusOr<std::string> PatchScale(const api::KindInfo& kind, const PatchRequest& req);
  absl::StatusOr<cache::Filter> MakeFilter(const api::KindInfo& kind, const std::string& ns,
                                           const std::string& labels,
                                           const std::string& fields) const;

  storage::Storage* store_;
  cache::WatchCache* cache_;
  const RegistryOptions options_;
};

std::string Key(const api::KindInfo& kind, const std::string& ns, const std::string& name);
// A resourceVersion as the store's revision; false unless it is all digits.
bool ParseRevision(const std::string& s, int64_t* out);

}  // namespace mkube::apiserver::registry
