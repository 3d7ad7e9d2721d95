#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "api/labels.h"
#include "api/object.h"
#include "client/client.h"
#include "controller/internal/owner.h"

namespace mkube::controller {

// What a controller may take as its own, as client-go's ControllerRefManager: of `candidates`
// (objects of `resource` in the owner's namespace), those it controls and whose labels still
// match `selector`; orphans that match are adopted (its controller reference added); its own
// that no longer match are released (the reference removed). A controller being deleted
// neither adopts nor releases. `can_adopt` is asked once, before the first adoption: it
// re-reads the owner from the apiserver so a stale cache cannot adopt for a deleted owner.
// An error adopting is kept in `error` (the sync is retried); releases may fail silently
// (the object is gone or changed; the next sync sees it again).
template <typename T>
std::vector<std::shared_ptr<const T>> Claim(client::ApiClient* client, const std::string& resource,
                                            const google::protobuf::Message& owner,
                                            const api::OwnerReference& ref,
                                            const api::Selector& selector,
                                            const std::vector<std::shared_ptr<const T>>& candidates,
                                            const std::function<absl::Status()>& can_adopt,
                                            absl::Status* error) {
  const api::ObjectMeta& owner_meta = api::MetaOf(owner);
  const bool owner_deleting = !owner_meta.deletion_timestamp().empty();
  std::optional<absl::Status> adoptable;
  std::vector<std::shared_ptr<const T>> mine;
  for (const auto& obj : candidates) {
    const api::ObjectMeta& meta = obj->metadata();
    const bool matches = selector.Matches(meta.labels());
    if (const api::OwnerReference* controller = ControllerOf(meta)) {
      if (controller->uid() != owner_meta.uid()) continue;  // someone else's
      if (matches) {
        mine.push_back(obj);
      } else if (!owner_deleting) {
        T released = *obj;
        auto* refs = released.mutable_metadata()->mutable_owner_references();
        for (int i = refs->size() - 1; i >= 0; --i) {
          if (refs->Get(i).uid() == owner_meta.uid()) refs->DeleteSubrange(i, 1);
        }
        (void)client->Update<T>(resource, meta.namespace_(), released);
      }
      continue;
    }
    if (!matches || owner_deleting || !meta.deletion_timestamp().empty()) continue;
    if (!adoptable) adoptable = can_adopt();
    if (!adoptable->ok()) {
      if (error && error->ok()) *error = *adoptable;
      continue;
    }
    T adopted = *obj;
    *adopted.mutable_metadata()->add_owner_references() = ref;
    auto updated = client->Update<T>(resource, meta.namespace_(), adopted);
    if (!updated.ok()) {
      if (error && error->ok() && updated.status().code() != absl::StatusCode::kNotFound) {
        *error = updated.status();
      }
      continue;
    }
    mine.push_back(std::make_shared<const T>(std::move(*updated)));
  }
  return mine;
}

}  // namespace mkube::controller
