#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "apiserver/registry/registry.h"

namespace mkube::apiserver::auth {

// Bearer tokens from a static token file: one `token,user,uid,"group1,group2"` per line.
class TokenAuthenticator {
 public:
  static absl::StatusOr<TokenAuthenticator> FromFile(const std::string& path);
  static absl::StatusOr<TokenAuthenticator> FromText(const std::string& text);
  // From the `authorization: Bearer <token>` metadata value.
  absl::StatusOr<registry::Caller> Authenticate(const std::string& header) const;

 private:
  std::map<std::string, registry::Caller> tokens_;
};

// What one request asks to do.
struct Attributes {
  std::string verb;  // get, list, watch, create, update, patch, delete
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  // For node callers changing pods: the node the pod is bound to.
  std::string pod_node;
};

// Deny by default. Roles: the admin (group system:masters), the controller-manager
// (system:kube-controller-manager), the scheduler (system:kube-scheduler) and nodes
// (system:node:<name> in system:nodes), which may change only their own Node and Lease and the
// status of pods bound to them (Kubernetes' NodeRestriction).
absl::Status Authorize(const registry::Caller& caller, const Attributes& a);
// The node a caller acts for (user system:node:<name> in group system:nodes), or empty.
std::string NodeOf(const registry::Caller& caller);

}  // namespace mkube::apiserver::auth
