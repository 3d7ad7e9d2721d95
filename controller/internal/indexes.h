#pragma once

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

inline void IndexPodsByNode(client::Informer<api::Pod>* pods) {
  pods->AddIndex(kByNode, [](const api::Pod& pod) {
    if (pod.spec().node_name().empty()) return std::vector<std::string>{};
    return std::vector<std::string>{pod.spec().node_name()};
  });
}

}  // namespace mkube::controller
