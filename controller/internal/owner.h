#pragma once

#include <string>

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

// A pod made from a controller's template, as Kubernetes' GetPodFromTemplate: the template's
// labels, annotations, finalizers and spec, a name generated from `prefix`, and `ref`.
api::Pod PodFromTemplate(const api::PodTemplateSpec& tmpl, const std::string& ns,
                         const std::string& prefix, const api::OwnerReference& ref);

}  // namespace mkube::controller
