#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "google/protobuf/message.h"

namespace mkube::controller::garbage {

using ObjectPtr = std::shared_ptr<const google::protobuf::Message>;

// One resource the garbage collector follows through a shared informer: objects by key, and
// the dependents of an owner (by the owner's uid).
class Followed {
 public:
  virtual ~Followed() = default;
  virtual const std::string& resource() const = 0;
  virtual ObjectPtr Get(const std::string& key) const = 0;
  virtual std::vector<ObjectPtr> DependentsOf(const std::string& owner_uid) const = 0;
};

inline constexpr char kByOwnerUid[] = "owner-uid";

// Follows an informer's cache.
template <typename T>
class FollowedInformer final : public Followed {
 public:
  FollowedInformer(client::Informer<T>* informer, std::string resource)
      : informer_(informer), resource_(std::move(resource)) {}
  const std::string& resource() const override { return resource_; }
  ObjectPtr Get(const std::string& key) const override { return informer_->Get(key); }
  std::vector<ObjectPtr> DependentsOf(const std::string& owner_uid) const override {
    auto found = informer_->ByIndex(kByOwnerUid, owner_uid);
    return std::vector<ObjectPtr>(found.begin(), found.end());
  }

 private:
  client::Informer<T>* const informer_;
  const std::string resource_;
};

// Kubernetes' garbage collector, by owner references:
// - an object all of whose owners are gone is deleted (background propagation: owners first,
//   dependents after), one with some owners left loses the references to the gone ones;
// - an owner deleted with propagation Foreground (finalizer foregroundDeletion) has its
//   dependents deleted first, in the foreground too, and goes once none that blocks its
//   deletion (blockOwnerDeletion) is left;
// - an owner deleted with propagation Orphan (finalizer orphan) has its references removed
//   from its dependents, which stay.
// Whether an owner is gone is asked of the apiserver, not only of a cache, so a cache that
// has not yet seen a new owner never costs its dependents.
class GarbageCollector final : public Controller {
 public:
  GarbageCollector(client::ApiClient* client, client::Clock* clock);
  ~GarbageCollector() override { Stop(); }

  // Follows the objects of `resource` through `informer` (before the informer starts): adds
  // the owner index and the handlers.
  template <typename T>
  void Follow(client::Informer<T>* informer, const std::string& resource) {
    informer->AddIndex(kByOwnerUid, [](const T& obj) {
      std::vector<std::string> uids;
      for (const auto& ref : obj.metadata().owner_references()) uids.push_back(ref.uid());
      return uids;
    });
    informer->AddHandlers({
        .on_add = [this, resource](const std::shared_ptr<const T>& o) {
          OnChange(resource, nullptr, o);
        },
        .on_update =
            [this, resource](const std::shared_ptr<const T>& old_obj,
                             const std::shared_ptr<const T>& o) { OnChange(resource, old_obj, o); },
        .on_delete = [this, resource](const std::shared_ptr<const T>& o) { OnDelete(resource, o); },
    });
    followed_.push_back(std::make_unique<FollowedInformer<T>>(informer, resource));
  }

  // Keys are "<resource>|<namespace>/<name>".
  absl::Status Sync(const std::string& key) override;

  // What the informers' handlers call.
  void OnChange(const std::string& resource, const ObjectPtr& old_obj, const ObjectPtr& obj);
  void OnDelete(const std::string& resource, const ObjectPtr& obj);

 private:
  const Followed* Find(const std::string& resource) const;
  // Whether the owner a reference names exists (the cache first, then the apiserver).
  absl::StatusOr<bool> OwnerExists(const std::string& ns, const api::OwnerReference& ref,
                                   bool ask_server) const;
  void EnqueueDependents(const std::string& owner_uid);
  void EnqueueOwnersInForeground(const google::protobuf::Message& obj);

  absl::Status OrphanDependents(const std::string& resource, const google::protobuf::Message& owner);
  absl::Status DeleteDependentsFirst(const std::string& resource,
                                     const google::protobuf::Message& owner);
  // Deletes `obj` when all its owners are gone, or drops the references to those gone. The
  // decision is taken on the apiserver's copy (`fresh`), never on a cache that may be behind.
  absl::Status CheckOwners(const std::string& resource, const google::protobuf::Message& obj,
                           bool fresh = false);
  absl::Status RemoveFinalizer(const std::string& resource, const google::protobuf::Message& obj,
                               const std::string& finalizer);
  // With `exact`, only the version of obj that was read (a resourceVersion precondition).
  absl::Status DeleteObject(const std::string& resource, const google::protobuf::Message& obj,
                            const std::string& propagation, bool exact = false);
  std::vector<std::pair<std::string, ObjectPtr>> AllDependents(const std::string& owner_uid) const;

  client::ApiClient* const client_;
  std::vector<std::unique_ptr<Followed>> followed_;  // set before the informers start
};

}  // namespace mkube::controller::garbage
