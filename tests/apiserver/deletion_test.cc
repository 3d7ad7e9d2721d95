// Deletion with finalizers and propagation policies, the same through the apiserver's registry
// (on the in-memory storage) and through the fake clientset: Background goes at once,
// Foreground and Orphan leave the object marked with their finalizer, an update that removes
// the last finalizer removes the object, no finalizer may be added to an object being deleted,
// and a pod on a node waits both for its node and for its finalizers.
#include <gtest/gtest.h>

#include <functional>

#include "api/strategy.h"
#include "client/testing/fake_client.h"
#include "proto/api/apps.pb.h"
#include "tests/apiserver/registry_env.h"

namespace mkube::apiserver {
namespace {

// The four verbs the cases need, by either backend.
struct Backend {
  std::function<absl::StatusOr<std::string>(const CreateRequest&)> create;
  std::function<absl::StatusOr<std::string>(const GetRequest&)> get;
  std::function<absl::StatusOr<std::string>(const UpdateRequest&)> update;
  std::function<absl::StatusOr<std::string>(const DeleteRequest&)> remove;
};

class DeletionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "registry") {
      auto env = mkube::testing::RegistryEnv::Start();
      ASSERT_TRUE(env.ok()) << env.status();
      env_ = std::move(*env);
      auto* r = env_->registry.get();
      b_ = {[r](const CreateRequest& q) { return r->Create(q); },
            [r](const GetRequest& q) { return r->Get(q); },
            [r](const UpdateRequest& q) { return r->Update(q); },
            [r](const DeleteRequest& q) { return r->Delete(q); }};
    } else {
      auto* f = &fake_;
      b_ = {[f](const CreateRequest& q) { return f->CreateRaw(q); },
            [f](const GetRequest& q) { return f->GetRaw(q); },
            [f](const UpdateRequest& q) { return f->UpdateRaw(q); },
            [f](const DeleteRequest& q) { return f->Delete(q); }};
    }
  }

  template <typename T>
  T Create(const std::string& resource, const T& obj) {
    CreateRequest req;
    req.set_resource(resource);
    req.set_namespace_("default");
    req.set_object(obj.SerializeAsString());
    auto r = b_.create(req);
    EXPECT_TRUE(r.ok()) << r.status();
    T out;
    if (r.ok()) out.ParseFromString(*r);
    return out;
  }
  template <typename T>
  absl::StatusOr<T> Get(const std::string& resource, const std::string& name) {
    GetRequest req;
    req.set_resource(resource);
    req.set_namespace_("default");
    req.set_name(name);
    auto r = b_.get(req);
    if (!r.ok()) return r.status();
    T out;
    out.ParseFromString(*r);
    return out;
  }
  template <typename T>
  absl::Status Update(const std::string& resource, const T& obj) {
    UpdateRequest req;
    req.set_resource(resource);
    req.set_namespace_("default");
    req.set_object(obj.SerializeAsString());
    return b_.update(req).status();
  }
  absl::Status Delete(const std::string& resource, const std::string& name,
                      const std::string& policy = "",
                      std::optional<int64_t> grace = std::nullopt) {
    DeleteRequest req;
    req.set_resource(resource);
    req.set_namespace_("default");
    req.set_name(name);
    req.set_propagation_policy(policy);
    if (grace) req.set_grace_period_seconds(*grace);
    return b_.remove(req).status();
  }
  static api::Deployment MakeDeployment(const std::string& name) {
    api::Deployment d;
    d.mutable_metadata()->set_name(name);
    (*d.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = name;
    (*d.mutable_spec()->mutable_template_()->mutable_metadata()->mutable_labels())["app"] = name;
    auto* c = d.mutable_spec()->mutable_template_()->mutable_spec()->add_containers();
    c->set_name("c");
    c->set_image("busybox");
    return d;
  }

  // A pod bound to node01 with a finalizer of someone else's.
  static api::Pod KeptPodOnNode01() {
    api::Pod pod;
    pod.mutable_metadata()->set_name("p");
    pod.mutable_metadata()->add_finalizers("example.com/keep");
    pod.mutable_spec()->set_node_name("node01");
    auto* c = pod.mutable_spec()->add_containers();
    c->set_name("c");
    c->set_image("busybox");
    return pod;
  }

  std::unique_ptr<mkube::testing::RegistryEnv> env_;
  client::testing::FakeClient fake_;
  Backend b_;
};

TEST_P(DeletionTest, BackgroundGoesAtOnce) {
  Create("deployments", MakeDeployment("web"));
  ASSERT_TRUE(Delete("deployments", "web", "Background").ok());
  EXPECT_EQ(Get<api::Deployment>("deployments", "web").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(DeletionTest, ForegroundWaitsForItsFinalizerAndGoesWhenItIsRemoved) {
  Create("deployments", MakeDeployment("web"));
  ASSERT_TRUE(Delete("deployments", "web", "Foreground").ok());
  auto d = Get<api::Deployment>("deployments", "web");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->metadata().deletion_timestamp().empty());
  ASSERT_EQ(d->metadata().finalizers_size(), 1);
  EXPECT_EQ(d->metadata().finalizers(0), api::kForegroundFinalizer);
  EXPECT_EQ(d->metadata().deletion_grace_period_seconds(), 0);
  // Deleting again changes nothing.
  ASSERT_TRUE(Delete("deployments", "web", "Foreground").ok());
  EXPECT_EQ(Get<api::Deployment>("deployments", "web")->metadata().resource_version(),
            d->metadata().resource_version());
  // The garbage collector's last step: the finalizer removed, the object gone.
  d->mutable_metadata()->clear_finalizers();
  ASSERT_TRUE(Update("deployments", *d).ok());
  EXPECT_EQ(Get<api::Deployment>("deployments", "web").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(DeletionTest, OrphanIsTheDefaultOfJobsOnly) {
  api::Job job;
  job.mutable_metadata()->set_name("pi");
  auto* c = job.mutable_spec()->mutable_template_()->mutable_spec()->add_containers();
  c->set_name("pi");
  c->set_image("busybox");
  job.mutable_spec()->mutable_template_()->mutable_spec()->set_restart_policy("Never");
  Create("jobs", job);
  ASSERT_TRUE(Delete("jobs", "pi").ok());
  auto j = Get<api::Job>("jobs", "pi");
  ASSERT_TRUE(j.ok()) << j.status();
  ASSERT_EQ(j->metadata().finalizers_size(), 1);
  EXPECT_EQ(j->metadata().finalizers(0), api::kOrphanFinalizer);
  Create("deployments", MakeDeployment("web"));
  ASSERT_TRUE(Delete("deployments", "web").ok());
  EXPECT_FALSE(Get<api::Deployment>("deployments", "web").ok());
}

TEST_P(DeletionTest, AnUnknownPolicyIsRefusedByName) {
  Create("deployments", MakeDeployment("web"));
  auto st = Delete("deployments", "web", "Sideways");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "propagationPolicy: Unsupported value: \"Sideways\": supported values: "
            "\"Foreground\", \"Background\", \"Orphan\"");
}

TEST_P(DeletionTest, NoFinalizerMayBeAddedToAnObjectBeingDeleted) {
  api::Deployment d = MakeDeployment("web");
  d.mutable_metadata()->add_finalizers("example.com/keep");
  Create("deployments", d);
  ASSERT_TRUE(Delete("deployments", "web").ok());
  auto cur = Get<api::Deployment>("deployments", "web");
  ASSERT_TRUE(cur.ok());
  cur->mutable_metadata()->add_finalizers("example.com/more");
  auto st = Update("deployments", *cur);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "Deployment \"web\" is invalid: metadata.finalizers: Forbidden: no new finalizers can "
            "be added if the object is being deleted, found new finalizers "
            "[]string{\"example.com/more\"}");
}

TEST_P(DeletionTest, APodOnANodeWaitsForItsNodeAndForItsFinalizers) {
  Create("pods", KeptPodOnNode01());
  ASSERT_TRUE(Delete("pods", "p").ok());
  auto p = Get<api::Pod>("pods", "p");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->metadata().deletion_grace_period_seconds(), 30);
  // Its node has stopped it: grace 0, but the finalizer keeps it.
  ASSERT_TRUE(Delete("pods", "p", "", 0).ok());
  p = Get<api::Pod>("pods", "p");
  ASSERT_TRUE(p.ok()) << "kept by its finalizer";
  EXPECT_EQ(p->metadata().deletion_grace_period_seconds(), 0);
  p->mutable_metadata()->clear_finalizers();
  ASSERT_TRUE(Update("pods", *p).ok());
  EXPECT_EQ(Get<api::Pod>("pods", "p").status().code(), absl::StatusCode::kNotFound);
}

TEST_P(DeletionTest, AFinalizerRemovedWhileTheNodeStillStopsThePodLeavesItToTheNode) {
  Create("pods", KeptPodOnNode01());
  ASSERT_TRUE(Delete("pods", "p").ok());
  auto p = Get<api::Pod>("pods", "p");
  p->mutable_metadata()->clear_finalizers();
  ASSERT_TRUE(Update("pods", *p).ok());
  EXPECT_TRUE(Get<api::Pod>("pods", "p").ok()) << "its grace period is not over";
  ASSERT_TRUE(Delete("pods", "p", "", 0).ok());
  EXPECT_FALSE(Get<api::Pod>("pods", "p").ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, DeletionTest, ::testing::Values("registry", "fake"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mkube::apiserver
