// The garbage collector and the pod garbage collector against the fake clientset: background,
// foreground and orphan propagation down a Deployment -> ReplicaSet -> Pod chain, owners that
// only the apiserver knows yet, a cache behind an orphaning, partly dangling references, and
// pods of a deleted node.
#include "controller/garbage/garbage_collector.h"

#include <gtest/gtest.h>

#include <map>

#include "api/strategy.h"
#include "controller/garbage/pod_gc.h"
#include "controller/internal/owner.h"
#include "tests/controller/harness.h"

namespace mkube::controller::garbage {
namespace {

using mkube::testing::Eventually;
using testing::Harness;
using testing::Template;

class GarbageCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gc_ = std::make_unique<GarbageCollector>(&h_.fake, &h_.clock);
    gc_->Follow(&h_.pods, "pods");
    gc_->Follow(&h_.replica_sets, "replicasets");
    gc_->Follow(&h_.deployments, "deployments");
    // What was deleted, by the revision of its deletion: the order things went in.
    auto record = [this](const char* what) {
      return [this, what](const auto& obj) {
        absl::MutexLock lock(&mu_);
        deleted_[std::stoll(obj->metadata().resource_version())] = what;
      };
    };
    h_.pods.AddHandlers({.on_delete = record("pod")});
    h_.replica_sets.AddHandlers({.on_delete = record("replicaset")});
    h_.deployments.AddHandlers({.on_delete = record("deployment")});
    h_.Start();
    gc_->Start(2);
  }
  void TearDown() override {
    h_.StopInformers();  // no handler may reach the controller once it is gone
    gc_.reset();
  }

  // A deployment owning a ReplicaSet owning two pods, as the controllers would leave them.
  void MakeChain() {
    api::Deployment d;
    d.mutable_metadata()->set_name("web");
    (*d.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = "web";
    *d.mutable_spec()->mutable_template_() = Template({{"app", "web"}});
    d = *h_.fake.Create<api::Deployment>("deployments", "default", d);
    api::ReplicaSet rs;
    rs.mutable_metadata()->set_name("web-1");
    *rs.mutable_metadata()->add_owner_references() = ControllerRef(d, "apps/v1", "Deployment");
    rs.mutable_spec()->set_replicas(2);
    (*rs.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = "web";
    *rs.mutable_spec()->mutable_template_() = Template({{"app", "web"}});
    rs = *h_.fake.Create<api::ReplicaSet>("replicasets", "default", rs);
    for (const char* name : {"web-1-a", "web-1-b"}) {
      api::Pod p = PodFromTemplate(rs.spec().template_(), "default", "web-1",
                                   ControllerRef(rs, "apps/v1", "ReplicaSet"));
      p.mutable_metadata()->set_name(name);
      ASSERT_TRUE(h_.fake.Create<api::Pod>("pods", "default", p).ok());
    }
    ASSERT_TRUE(h_.Settle());
  }
  absl::Status Delete(const std::string& resource, const std::string& name,
                      const std::string& policy) {
    apiserver::DeleteRequest req;
    req.set_resource(resource);
    req.set_namespace_("default");
    req.set_name(name);
    req.set_propagation_policy(policy);
    return h_.fake.Delete(req).status();
  }
  size_t Count(const std::string& resource) {
    apiserver::ListRequest req;
    req.set_resource(resource);
    req.set_namespace_("default");
    auto list = h_.fake.List(req);
    return list.ok() ? list->items_size() : 0;
  }

  std::vector<std::string> DeletedInOrder() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& [rv, what] : deleted_) out.push_back(what);
    return out;
  }

  Harness h_;
  std::unique_ptr<GarbageCollector> gc_;
  absl::Mutex mu_;
  std::map<int64_t, std::string> deleted_ ABSL_GUARDED_BY(mu_);
};

TEST_F(GarbageCollectorTest, BackgroundDeletesTheOwnerFirstThenItsDependents) {
  MakeChain();
  ASSERT_TRUE(Delete("deployments", "web", "Background").ok());
  EXPECT_EQ(Count("deployments"), 0u) << "the owner goes at once";
  ASSERT_TRUE(Eventually([&] { return DeletedInOrder().size() == 4; }));
  EXPECT_EQ(DeletedInOrder(),
            (std::vector<std::string>{"deployment", "replicaset", "pod", "pod"}));
}

TEST_F(GarbageCollectorTest, ForegroundDeletesTheDependentsFirstThenTheOwner) {
  MakeChain();
  ASSERT_TRUE(Delete("deployments", "web", "Foreground").ok());
  ASSERT_TRUE(Eventually([&] { return DeletedInOrder().size() == 4; }));
  EXPECT_EQ(DeletedInOrder(),
            (std::vector<std::string>{"pod", "pod", "replicaset", "deployment"}));
}

TEST_F(GarbageCollectorTest, OrphanLeavesTheDependentsWithoutTheReference) {
  MakeChain();
  ASSERT_TRUE(Delete("deployments", "web", "Orphan").ok());
  ASSERT_TRUE(Eventually([&] { return Count("deployments") == 0; }));
  const auto rs = h_.Get<api::ReplicaSet>("replicasets", "web-1");
  EXPECT_EQ(rs.metadata().owner_references_size(), 0);
  EXPECT_EQ(Count("pods"), 2u);
  // Now an orphan: deleting it in the background takes its pods along.
  ASSERT_TRUE(Delete("replicasets", "web-1", "Background").ok());
  EXPECT_TRUE(Eventually([&] { return Count("pods") == 0; }));
}

TEST_F(GarbageCollectorTest, ACacheThatMissedAnOrphaningKeepsTheDependent) {
  MakeChain();
  // The ReplicaSet cache stops here, still showing the Deployment as its owner...
  h_.replica_sets.Stop();
  // ...while the apiserver has it orphaned (as an Orphan deletion does) and the owner gone.
  auto rs = h_.Get<api::ReplicaSet>("replicasets", "web-1");
  rs.mutable_metadata()->clear_owner_references();
  ASSERT_TRUE(h_.fake.Update<api::ReplicaSet>("replicasets", "default", rs).ok());
  ASSERT_TRUE(Delete("deployments", "web", "Background").ok());
  ASSERT_TRUE(Eventually([&] { return h_.deployments.Get("default/web") == nullptr; }));
  ASSERT_EQ(gc_->Sync("replicasets|default/web-1"), absl::OkStatus());
  EXPECT_EQ(Count("replicasets"), 1u) << "decided on the apiserver's copy, not the cache's";
  EXPECT_EQ(Count("pods"), 2u);
}

TEST_F(GarbageCollectorTest, OnlyTheReferencesToGoneOwnersGoWhenOthersAreLeft) {
  MakeChain();
  api::Pod p = h_.Get<api::Pod>("pods", "web-1-a");
  api::OwnerReference gone;
  gone.set_api_version("apps/v1");
  gone.set_kind("ReplicaSet");
  gone.set_name("no-such-set");
  gone.set_uid("no-such-uid");
  *p.mutable_metadata()->add_owner_references() = gone;
  ASSERT_TRUE(h_.fake.Update<api::Pod>("pods", "default", p).ok());
  ASSERT_TRUE(Eventually(
      [&] { return h_.Get<api::Pod>("pods", "web-1-a").metadata().owner_references_size() == 1; }));
  EXPECT_EQ(Count("pods"), 2u);
}

TEST_F(GarbageCollectorTest, AnOwnerOnlyTheApiserverKnowsKeepsItsDependents) {
  // The GC follows no DaemonSets: a pod of one cannot be checked in a cache.
  api::DaemonSet ds;
  ds.mutable_metadata()->set_name("agent");
  (*ds.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = "agent";
  *ds.mutable_spec()->mutable_template_() = Template({{"app", "agent"}});
  ds = *h_.fake.Create<api::DaemonSet>("daemonsets", "default", ds);
  api::Pod p = PodFromTemplate(ds.spec().template_(), "default", "agent",
                               ControllerRef(ds, "apps/v1", "DaemonSet"));
  p.mutable_metadata()->set_name("agent-x");
  ASSERT_TRUE(h_.fake.Create<api::Pod>("pods", "default", p).ok());
  ASSERT_TRUE(h_.Settle());
  ASSERT_TRUE(h_.fake.WaitForActions("get", 1)) << "asked the apiserver about the owner";
  ASSERT_TRUE(gc_->queue().Len() == 0 || Eventually([&] { return gc_->queue().Len() == 0; }));
  EXPECT_EQ(Count("pods"), 1u);
  ASSERT_TRUE(Delete("daemonsets", "agent", "Background").ok());
  // A pod update brings it back to the GC, which now finds the owner gone.
  p = h_.Get<api::Pod>("pods", "agent-x");
  (*p.mutable_metadata()->mutable_labels())["touched"] = "yes";
  ASSERT_TRUE(h_.fake.Update<api::Pod>("pods", "default", p).ok());
  EXPECT_TRUE(Eventually([&] { return Count("pods") == 0; }));
}

TEST(PodGCTest, PodsOfADeletedNodeAreDeletedAndSoAreThoseOfANodeThatNeverWas) {
  Harness h;
  PodGC gc(&h.fake, &h.nodes, &h.pods, &h.clock, absl::Seconds(20));
  h.Start();
  api::Node node;
  node.mutable_metadata()->set_name("node01");
  ASSERT_TRUE(h.fake.Create<api::Node>("nodes", "", node).ok());
  for (const auto& [name, on] : std::vector<std::pair<std::string, std::string>>{
           {"a", "node01"}, {"b", "node01"}, {"c", "ghost"}, {"d", ""}}) {
    api::Pod p;
    p.mutable_metadata()->set_name(name);
    p.mutable_spec()->set_node_name(on);
    *p.mutable_spec()->add_containers() = Template({}).spec().containers(0);
    ASSERT_TRUE(h.fake.Create<api::Pod>("pods", "default", p).ok());
  }
  ASSERT_TRUE(h.Settle());
  gc.Start(1);
  // The periodic pass finds the pod of a node that does not exist.
  h.clock.Advance(absl::Seconds(21));
  ASSERT_TRUE(Eventually([&] { return h.Pods().size() == 3; }));
  apiserver::DeleteRequest del;
  del.set_resource("nodes");
  del.set_name("node01");
  ASSERT_TRUE(h.fake.Delete(del).ok());
  ASSERT_TRUE(Eventually([&] { return h.Pods().size() == 1; }));
  EXPECT_EQ(h.Pods()[0].metadata().name(), "d") << "an unscheduled pod has no node to lose";
  h.StopInformers();
  gc.Stop();
}

}  // namespace
}  // namespace mkube::controller::garbage
