#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "client/informer.h"
#include "google/protobuf/message.h"
#include "proto/api/core.pb.h"
#include "proto/api/meta.pb.h"

namespace mkube::controller {

// The owner reference marked `controller: true`, or null: who manages the object.
const api::OwnerReference* ControllerOf(const api::ObjectMeta& meta);
// A reference to `owner` as its controller (blockOwnerDeletion set, as Kubernetes' controllers
// set it, so foreground deletion waits for the dependent).
api::OwnerReference ControllerRef(const google::protobuf::Message& owner,
                                  const std::string& api_version, const std::string& kind);
// Whether `meta` names `owner_uid` as its controller.
bool ControlledBy(const api::ObjectMeta& meta, const std::string& owner_uid);

// The object a controller reference names, as Kubernetes' controllers' resolveControllerRef:
// the `kind` of that name in `ns` in `informer`'s cache, only if it is the one the reference
// names (its uid: not a namesake made since); null without a reference, for another kind, or
// when the cache holds no such object.
template <typename T>
std::shared_ptr<const T> ResolveControllerRef(const client::Informer<T>& informer,
                                              const std::string& ns, const api::OwnerReference* ref,
                                              std::string_view kind) {
  if (!ref || ref->kind() != kind) return nullptr;
  std::shared_ptr<const T> owner = informer.Get(ns + "/" + ref->name());
  if (!owner || owner->metadata().uid() != ref->uid()) return nullptr;
  return owner;
}

// A pod made from a controller's template, as Kubernetes' GetPodFromTemplate: the template's
// labels, annotations, finalizers and spec, a name generated from `prefix`, and `ref`.
api::Pod PodFromTemplate(const api::PodTemplateSpec& tmpl, const std::string& ns,
                         const std::string& prefix, const api::OwnerReference& ref);

}  // namespace mkube::controller
