#include "apiserver/server/gate.h"

#include "base/status.h"
#include "proto/api/core.pb.h"

namespace mkube::apiserver::server {
namespace {

std::string Canonical(const std::string& resource) {
  const api::KindInfo* k = api::FindResource(resource);
  return k ? k->request_resource() : resource;
}

}  // namespace

absl::Status Gate::Check(const registry::Caller& caller, auth::Attributes a) const {
  a.resource = Canonical(a.resource);
  if (a.resource == "pods" && !a.name.empty() && !auth::NodeOf(caller).empty() &&
      (a.verb == "update" || a.verb == "patch" || a.verb == "delete")) {
    // NodeRestriction needs to know where the pod runs (only nodes are restricted by it).
    if (auto pod = registry_->GetAs<api::Pod>("pods", a.ns, a.name); pod.ok()) {
      a.pod_node = pod->spec().node_name();
    }
  }
  return auth::Authorize(caller, a);
}

absl::StatusOr<registry::Registry::Admit> Gate::CheckUpdate(const registry::Caller& caller,
                                                            auth::Attributes a) const {
  a.resource = Canonical(a.resource);
  if (a.resource != "pods" || auth::NodeOf(caller).empty()) {
    MKUBE_RETURN_IF_ERROR(auth::Authorize(caller, a));
    return nullptr;
  }
  // NodeRestriction: a node changes only pods bound to it, as the write finds them.
  return [caller, a](const google::protobuf::Message& current) mutable {
    a.pod_node = static_cast<const api::Pod&>(current).spec().node_name();
    return auth::Authorize(caller, a);
  };
}

}  // namespace mkube::apiserver::server
