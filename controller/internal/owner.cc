#include "controller/internal/owner.h"

#include "api/object.h"

namespace mkube::controller {

const api::OwnerReference* ControllerOf(const api::ObjectMeta& meta) {
  for (const auto& ref : meta.owner_references()) {
    if (ref.controller()) return &ref;
  }
  return nullptr;
}

api::OwnerReference ControllerRef(const google::protobuf::Message& owner,
                                  const std::string& api_version, const std::string& kind) {
  const api::ObjectMeta& meta = api::MetaOf(owner);
  api::OwnerReference ref;
  ref.set_api_version(api_version);
  ref.set_kind(kind);
  ref.set_name(meta.name());
  ref.set_uid(meta.uid());
  ref.set_controller(true);
  ref.set_block_owner_deletion(true);
  return ref;
}

bool ControlledBy(const api::ObjectMeta& meta, const std::string& owner_uid) {
  const api::OwnerReference* ref = ControllerOf(meta);
  return ref && ref->uid() == owner_uid;
}

api::Pod PodFromTemplate(const api::PodTemplateSpec& tmpl, const std::string& ns,
                         const std::string& prefix, const api::OwnerReference& ref) {
  // Kubernetes keeps generated names within 63 characters: the prefix gives way to the
  // five random ones the apiserver adds.
  constexpr size_t kMaxPrefix = 63 - 5;
  api::Pod pod;
  pod.set_api_version("v1");
  pod.set_kind("Pod");
  auto* meta = pod.mutable_metadata();
  std::string base = prefix + "-";
  if (base.size() > kMaxPrefix) base = base.substr(0, kMaxPrefix);
  meta->set_generate_name(base);
  meta->set_namespace_(ns);
  *meta->mutable_labels() = tmpl.metadata().labels();
  *meta->mutable_annotations() = tmpl.metadata().annotations();
  *meta->mutable_finalizers() = tmpl.metadata().finalizers();
  *meta->add_owner_references() = ref;
  *pod.mutable_spec() = tmpl.spec();
  return pod;
}

}  // namespace mkube::controller
