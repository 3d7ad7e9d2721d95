#pragma once

#include <memory>
#include <string>
#include <vector>

#include "client/informer.h"
#include "controller/internal/owner.h"
#include "proto/api/core.pb.h"

namespace mkube::controller {

// Index names of the shared informers' caches.
inline constexpr char kByNamespace[] = "namespace";
inline constexpr char kByNode[] = "node";  // pods by spec.nodeName
inline constexpr char kByController[] = "controller";  // objects by their controller's uid
inline constexpr char kOrphans[] = "orphans";          // objects without a controller, by namespace

// Files a namespaced kind's objects by namespace (adding it twice is harmless).
template <typename T>
void IndexByNamespace(client::Informer<T>* informer) {
  informer->AddIndex(kByNamespace, [](const T& obj) {
    return std::vector<std::string>{obj.metadata().namespace_()};
  });
}

// Files objects by the uid of their controller (those without one are not filed).
template <typename T>
void IndexByController(client::Informer<T>* informer) {
  informer->AddIndex(kByController, [](const T& obj) {
    const api::OwnerReference* ref = ControllerOf(obj.metadata());
    return ref ? std::vector<std::string>{ref->uid()} : std::vector<std::string>{};
  });
}

// Files objects without a controller by their namespace.
template <typename T>
void IndexOrphans(client::Informer<T>* informer) {
  informer->AddIndex(kOrphans, [](const T& obj) {
    return ControllerOf(obj.metadata()) ? std::vector<std::string>{}
                                        : std::vector<std::string>{obj.metadata().namespace_()};
  });
}

// What a controller may claim, as Kubernetes' FilterPodsByOwner: the objects `owner` controls
// and the orphans of its namespace (needs IndexByController and IndexOrphans). Objects other
// controllers own are left out without being looked at.
template <typename T>
std::vector<std::shared_ptr<const T>> OwnedOrOrphaned(const client::Informer<T>& informer,
                                                      const api::ObjectMeta& owner) {
  std::vector<std::shared_ptr<const T>> out = informer.ByIndex(kByController, owner.uid());
  for (auto& orphan : informer.ByIndex(kOrphans, owner.namespace_())) {
    out.push_back(std::move(orphan));
  }
  return out;
}

inline void IndexPodsByNode(client::Informer<api::Pod>* pods) {
  pods->AddIndex(kByNode, [](const api::Pod& pod) {
    if (pod.spec().node_name().empty()) return std::vector<std::string>{};
    return std::vector<std::string>{pod.spec().node_name()};
  });
}

}  // namespace mkube::controller
