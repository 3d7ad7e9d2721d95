// The fake clientset behaves as the apiserver does where client code depends on it.
#include "client/testing/fake_client.h"

#include <gtest/gtest.h>

#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::client::testing {
namespace {

api::Pod MakePod(const std::string& name, const std::string& node = "") {
  api::Pod pod;
  pod.mutable_metadata()->set_name(name);
  (*pod.mutable_metadata()->mutable_labels())["app"] = "web";
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image("busybox");
  pod.mutable_spec()->set_node_name(node);
  return pod;
}

// pods/binding answers with the bound pod, as the apiserver does.
absl::StatusOr<std::string> Bind(FakeClient& fake, const std::string& pod, const std::string& node) {
  api::Binding binding;
  binding.mutable_metadata()->set_name(pod);
  binding.mutable_target()->set_name(node);
  apiserver::CreateRequest req;
  req.set_resource("pods");
  req.set_namespace_("default");
  req.set_name(pod);
  req.set_subresource("binding");
  req.set_object(binding.SerializeAsString());
  return fake.CreateRaw(req);
}

std::vector<std::string> Events(WatchStream* w, int n) {
  std::vector<std::string> out;
  apiserver::WatchEvent ev;
  while (static_cast<int>(out.size()) < n && w->Read(&ev)) {
    api::Pod pod;
    pod.ParseFromString(ev.object());
    out.push_back(ev.type() + " " + pod.metadata().name());
  }
  return out;
}

TEST(FakeClient, WritesGetVersionsAndStaleUpdatesConflict) {
  FakeClient fake;
  auto created = fake.Create("pods", "default", MakePod("a"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->metadata().uid().empty());
  EXPECT_EQ(created->status().phase(), "Pending");
  EXPECT_EQ(created->spec().restart_policy(), "Always") << "defaulted";
  EXPECT_EQ(fake.Create("pods", "default", MakePod("a")).status().code(),
            absl::StatusCode::kAlreadyExists);

  api::Pod changed = *created;
  (*changed.mutable_metadata()->mutable_labels())["tier"] = "front";
  auto updated = fake.Update("pods", "default", changed);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_GT(std::stoll(updated->metadata().resource_version()),
            std::stoll(created->metadata().resource_version()));
  // The same update again names a version that is no longer current.
  EXPECT_EQ(fake.Update("pods", "default", changed).status().code(), absl::StatusCode::kAborted);

  EXPECT_EQ(fake.Get<api::Pod>("pods", "default", "nope").status().code(),
            absl::StatusCode::kNotFound);
  api::Pod invalid = MakePod("b");
  invalid.mutable_spec()->clear_containers();
  EXPECT_EQ(fake.Create("pods", "default", invalid).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FakeClient, StatusBindingPatchAndGracefulDeletion) {
  FakeClient fake;
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("a")).ok());
  ASSERT_TRUE(Bind(fake, "a", "node01").ok());
  EXPECT_EQ(Bind(fake, "a", "node02").status().code(), absl::StatusCode::kAborted)
      << "already bound";

  api::Pod status = *fake.Get<api::Pod>("pods", "default", "a");
  status.mutable_status()->set_phase("Running");
  status.mutable_spec()->set_node_name("elsewhere");  // ignored by pods/status
  auto after = fake.Update("pods", "default", status, "status");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status().phase(), "Running");
  EXPECT_EQ(after->spec().node_name(), "node01");

  auto patched = fake.Patch<api::Pod>("pods", "default", "a", R"({"metadata":{"labels":{"x":"y"}}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(patched->metadata().labels().at("x"), "y");
  EXPECT_EQ(patched->status().phase(), "Running");

  apiserver::DeleteRequest del;
  del.set_resource("pods");
  del.set_namespace_("default");
  del.set_name("a");
  ASSERT_TRUE(fake.Delete(del).ok());
  auto marked = fake.Get<api::Pod>("pods", "default", "a");
  ASSERT_TRUE(marked.ok()) << "a bound pod is only marked";
  EXPECT_FALSE(marked->metadata().deletion_timestamp().empty());
  del.set_grace_period_seconds(0);
  ASSERT_TRUE(fake.Delete(del).ok());
  EXPECT_EQ(fake.Get<api::Pod>("pods", "default", "a").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(FakeClient, WatchesReplayFromAVersionAndFollowSelections) {
  FakeClient fake;
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("a")).ok());
  const std::string after_a = std::to_string(fake.resource_version());
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("b", "node01")).ok());

  apiserver::WatchRequest all;
  all.set_resource("pods");
  auto from_start = fake.Watch(all);
  EXPECT_EQ(Events(from_start.get(), 2), (std::vector<std::string>{"ADDED a", "ADDED b"}));

  apiserver::WatchRequest on_node = all;
  on_node.set_field_selector("spec.nodeName=node01");
  on_node.set_resource_version(after_a);
  auto node = fake.Watch(on_node);
  EXPECT_EQ(Events(node.get(), 1), (std::vector<std::string>{"ADDED b"}));

  // a enters the node's selection (ADDED for that watch), b leaves it (DELETED).
  ASSERT_TRUE(Bind(fake, "a", "node01").ok());
  apiserver::DeleteRequest del;
  del.set_resource("pods");
  del.set_namespace_("default");
  del.set_name("b");
  del.set_grace_period_seconds(0);
  ASSERT_TRUE(fake.Delete(del).ok());
  EXPECT_EQ(Events(node.get(), 2), (std::vector<std::string>{"ADDED a", "DELETED b"}));
  EXPECT_EQ(Events(from_start.get(), 2), (std::vector<std::string>{"MODIFIED a", "DELETED b"}));

  fake.Compact();
  auto stale = fake.Watch(on_node);
  apiserver::WatchEvent ev;
  EXPECT_FALSE(stale->Read(&ev));
  EXPECT_EQ(stale->Finish().code(), absl::StatusCode::kOutOfRange);

  fake.EndWatches(absl::UnavailableError("connection reset"));
  EXPECT_FALSE(node->Read(&ev));
  EXPECT_EQ(node->Finish().code(), absl::StatusCode::kUnavailable);
}

TEST(FakeClient, ReactorsFailCallsAndActionsAreRecorded) {
  FakeClient fake;
  fake.FailNext("create", "pods", absl::UnavailableError("apiserver down"), 2);
  EXPECT_EQ(fake.Create("pods", "default", MakePod("a")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(fake.Create("pods", "default", MakePod("a")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(fake.Create("pods", "default", MakePod("a")).ok());
  EXPECT_EQ(fake.Actions("create", "pods").size(), 3u);
  fake.PrependReactor("get", "*", [](const Action& a) -> std::optional<absl::Status> {
    if (a.name == "a") return absl::PermissionDeniedError("no");
    return std::nullopt;
  });
  EXPECT_EQ(fake.Get<api::Pod>("pods", "default", "a").status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(FakeClient, GenerationCountsSpecChangesOnly) {
  FakeClient fake;
  api::Deployment d;
  d.mutable_metadata()->set_name("web");
  (*d.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = "web";
  auto* tmpl = d.mutable_spec()->mutable_template_();
  (*tmpl->mutable_metadata()->mutable_labels())["app"] = "web";
  for (const char* k : {"a", "b", "c"}) (*tmpl->mutable_spec()->mutable_node_selector())[k] = k;
  auto* c = tmpl->mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image("nginx");
  ASSERT_TRUE(fake.Create("deployments", "default", d).ok());
  for (int i = 0; i < 5; ++i) {
    auto p = fake.Patch<api::Deployment>("deployments", "default", "web",
                                         R"({"metadata":{"annotations":{"n":")" +
                                             std::to_string(i) + R"("}}})");
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->metadata().generation(), 1);
  }
  auto scaled = fake.Patch<api::Deployment>("deployments", "default", "web",
                                            R"({"spec":{"replicas":3}})");
  ASSERT_TRUE(scaled.ok());
  EXPECT_EQ(scaled->metadata().generation(), 2);
}

}  // namespace
}  // namespace mkube::client::testing
