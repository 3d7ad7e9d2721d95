// Authorization, identity by identity: deny by default, the scheduler's and nodes' limited
// rights, and every NodeRestriction case.
#include "apiserver/auth/auth.h"

#include <gtest/gtest.h>

namespace mkube::apiserver::auth {
namespace {

const registry::Caller kAdmin{"admin", {"system:masters"}};
const registry::Caller kControllers{"system:kube-controller-manager", {}};
const registry::Caller kScheduler{"system:kube-scheduler", {}};
const registry::Caller kNode01{"system:node:node01", {"system:nodes"}};
const registry::Caller kStranger{"bob", {}};
const registry::Caller kNodeNameWithoutGroup{"system:node:node01", {}};
const registry::Caller kNodesGroupWithoutNodeName{"bob", {"system:nodes"}};

struct Case {
  std::string name;
  registry::Caller caller;
  Attributes attrs;  // verb, resource, subresource, ns, name, pod_node
  bool allowed;
};

TEST(Authorize, EveryIdentityVerbAndResource) {
  const std::vector<Case> cases = {
      // The admins and the controller-manager may do anything.
      {"the admin deletes a node", kAdmin, {"delete", "nodes", "", "", "node01", ""}, true},
      {"the admin reads a pod's log", kAdmin, {"get", "pods", "log", "default", "p", ""}, true},
      {"the admin execs in a pod", kAdmin, {"create", "pods", "exec", "default", "p", ""}, true},
      {"the controller-manager creates pods", kControllers, {"create", "pods", "", "default", "p", ""}, true},
      {"the controller-manager deletes nodes", kControllers, {"delete", "nodes", "", "", "node01", ""}, true},
      // The scheduler reads everything, binds, reports pod conditions, events, its lease.
      {"the scheduler lists pods", kScheduler, {"list", "pods", "", "", "", ""}, true},
      {"the scheduler watches nodes", kScheduler, {"watch", "nodes", "", "", "", ""}, true},
      {"the scheduler binds a pod", kScheduler, {"create", "pods", "binding", "default", "p", ""}, true},
      {"the scheduler sets a pod's condition", kScheduler, {"update", "pods", "status", "default", "p", ""}, true},
      {"the scheduler patches a pod's status", kScheduler, {"patch", "pods", "status", "default", "p", ""}, true},
      {"the scheduler records an event", kScheduler, {"create", "events", "", "default", "e", ""}, true},
      {"the scheduler renews its lease", kScheduler, {"update", "leases", "", "kube-system", "mkube-scheduler", ""}, true},
      {"the scheduler cannot create pods", kScheduler, {"create", "pods", "", "default", "p", ""}, false},
      {"the scheduler cannot delete pods", kScheduler, {"delete", "pods", "", "default", "p", ""}, false},
      {"the scheduler cannot change a pod's spec", kScheduler, {"update", "pods", "", "default", "p", ""}, false},
      {"the scheduler cannot change nodes", kScheduler, {"patch", "nodes", "", "", "node01", ""}, false},
      {"the scheduler cannot take a node's lease", kScheduler, {"update", "leases", "", "kube-node-lease", "node01", ""}, false},
      {"the scheduler cannot read logs", kScheduler, {"get", "pods", "log", "default", "p", ""}, false},
      {"the scheduler cannot exec", kScheduler, {"create", "pods", "exec", "default", "p", ""}, false},
      // NodeRestriction: a node changes only its own Node, its own Lease, and the status of
      // pods bound to it (and deletes them once stopped).
      {"a node reads any pod", kNode01, {"get", "pods", "", "default", "p", "node02"}, true},
      {"a node lists nodes", kNode01, {"list", "nodes", "", "", "", ""}, true},
      {"a node registers itself", kNode01, {"create", "nodes", "", "", "node01", ""}, true},
      {"a node updates its own status", kNode01, {"update", "nodes", "status", "", "node01", ""}, true},
      {"a node patches itself", kNode01, {"patch", "nodes", "", "", "node01", ""}, true},
      {"a node cannot register another", kNode01, {"create", "nodes", "", "", "node02", ""}, false},
      {"a node cannot update another's status", kNode01, {"update", "nodes", "status", "", "node02", ""}, false},
      {"a node cannot delete another", kNode01, {"delete", "nodes", "", "", "node02", ""}, false},
      {"a node creates its lease", kNode01, {"create", "leases", "", "kube-node-lease", "node01", ""}, true},
      {"a node renews its lease", kNode01, {"update", "leases", "", "kube-node-lease", "node01", ""}, true},
      {"a node cannot renew another's lease", kNode01, {"update", "leases", "", "kube-node-lease", "node02", ""}, false},
      {"a node cannot write leases elsewhere", kNode01, {"update", "leases", "", "kube-system", "node01", ""}, false},
      {"a node reports the status of its pod", kNode01, {"update", "pods", "status", "default", "p", "node01"}, true},
      {"a node patches the status of its pod", kNode01, {"patch", "pods", "status", "default", "p", "node01"}, true},
      {"a node deletes its stopped pod", kNode01, {"delete", "pods", "", "default", "p", "node01"}, true},
      {"a node cannot report another node's pod", kNode01, {"update", "pods", "status", "default", "p", "node02"}, false},
      {"a node cannot report an unbound pod", kNode01, {"update", "pods", "status", "default", "p", ""}, false},
      {"a node cannot delete another node's pod", kNode01, {"delete", "pods", "", "default", "p", "node02"}, false},
      {"a node cannot change its pod's spec", kNode01, {"update", "pods", "", "default", "p", "node01"}, false},
      {"a node cannot create pods", kNode01, {"create", "pods", "", "default", "p", ""}, false},
      {"a node cannot bind pods", kNode01, {"create", "pods", "binding", "default", "p", ""}, false},
      {"a node cannot evict pods", kNode01, {"create", "pods", "eviction", "default", "p", "node01"}, false},
      {"a node records events", kNode01, {"create", "events", "", "default", "e", ""}, true},
      {"a node updates its events", kNode01, {"update", "events", "", "default", "e", ""}, true},
      {"a node cannot delete events", kNode01, {"delete", "events", "", "default", "e", ""}, false},
      {"a node cannot read logs through the apiserver", kNode01, {"get", "pods", "log", "default", "p", "node01"}, false},
      {"a node cannot change deployments", kNode01, {"update", "deployments", "", "default", "d", ""}, false},
      {"a node cannot delete namespaces", kNode01, {"delete", "namespaces", "", "", "default", ""}, false},
      // Deny by default: unknown users, and half a node identity.
      {"a stranger cannot read", kStranger, {"get", "pods", "", "default", "p", ""}, false},
      {"a stranger cannot list", kStranger, {"list", "namespaces", "", "", "", ""}, false},
      {"a stranger cannot create", kStranger, {"create", "pods", "", "default", "p", ""}, false},
      {"a node name without the nodes group is nobody", kNodeNameWithoutGroup, {"update", "nodes", "status", "", "node01", ""}, false},
      {"the nodes group without a node name is nobody", kNodesGroupWithoutNodeName, {"get", "pods", "", "default", "p", ""}, false},
  };
  for (const auto& c : cases) {
    const absl::Status st = Authorize(c.caller, c.attrs);
    EXPECT_EQ(st.ok(), c.allowed) << c.name << ": " << st;
    if (!c.allowed) {
      EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << c.name;
    }
  }
}

TEST(Authorize, ADenialSaysWhoCannotDoWhat) {
  const absl::Status st = Authorize(kNode01, {"update", "nodes", "status", "", "node02", ""});
  EXPECT_EQ(st.message(),
            "nodes/status \"node02\" is forbidden: User \"system:node:node01\" cannot update "
            "resource \"nodes/status\" at the cluster scope");
  const absl::Status ns = Authorize(kStranger, {"get", "pods", "", "default", "p", ""});
  EXPECT_EQ(ns.message(),
            "pods \"p\" is forbidden: User \"bob\" cannot get resource \"pods\" in the namespace "
            "\"default\"");
}

TEST(NodeOf, OnlyAFullNodeIdentityNamesANode) {
  EXPECT_EQ(NodeOf(kNode01), "node01");
  EXPECT_EQ(NodeOf(kNodeNameWithoutGroup), "");
  EXPECT_EQ(NodeOf(kNodesGroupWithoutNodeName), "");
  EXPECT_EQ(NodeOf(kAdmin), "");
}

TEST(TokenAuthenticator, ReadsTheTokenFileAndRefusesUnknownTokens) {
  auto a = TokenAuthenticator::FromText(
      "# token,user,uid,groups\nt1,admin,1,\"system:masters\"\nt2,system:node:n1,2,\"system:nodes,x\"\n");
  ASSERT_TRUE(a.ok()) << a.status();
  auto admin = a->Authenticate("Bearer t1");
  ASSERT_TRUE(admin.ok());
  EXPECT_EQ(admin->user, "admin");
  auto node = a->Authenticate("Bearer t2");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->groups, (std::vector<std::string>{"system:nodes", "x"}));
  EXPECT_EQ(a->Authenticate("Bearer nope").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(a->Authenticate("t1").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(a->Authenticate("").status().code(), absl::StatusCode::kUnauthenticated);
  auto bad = TokenAuthenticator::FromText("only-a-token\n");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 1"), std::string::npos);
}

}  // namespace
}  // namespace mkube::apiserver::auth
