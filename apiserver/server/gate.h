#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "apiserver/auth/auth.h"
#include "apiserver/registry/registry.h"

namespace mkube::apiserver::server {

// Authentication and authorization as both fronts (gRPC and the Kubernetes HTTP API) apply
// them: the same callers, the same rules, NodeRestriction included.
class Gate {
 public:
  Gate(registry::Registry* registry, const auth::TokenAuthenticator* authn)
      : registry_(registry), authn_(authn) {}

  // The caller an `Authorization: Bearer <token>` value names.
  absl::StatusOr<registry::Caller> Authenticate(const std::string& authorization) const {
    return authn_->Authenticate(authorization);
  }
  // Whether `caller` may do `a`; for a node changing a pod, NodeRestriction reads where the
  // pod is bound.
  absl::Status Check(const registry::Caller& caller, auth::Attributes a) const;
  // Check for an update, without reading the store: for a node caller on pods, what cannot
  // be checked before the pod is read is returned, to be checked against the pod the write
  // replaces.
  absl::StatusOr<registry::Registry::Admit> CheckUpdate(const registry::Caller& caller,
                                                        auth::Attributes a) const;

 private:
  registry::Registry* registry_;
  const auth::TokenAuthenticator* authn_;
};

}  // namespace mkube::apiserver::server
