// Updates and bindings start from the watch cache's copy of the object; when that copy is
// stale, the answer still comes from the store's. The cache is stopped here so that it stays
// behind a write made straight to the store.
#include <gtest/gtest.h>

#include "apiserver/storage/requests.h"
#include "proto/api/core.pb.h"
#include "tests/apiserver/registry_env.h"

namespace mkube::apiserver::registry {
namespace {

class ReadModifyWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = mkube::testing::RegistryEnv::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = std::move(*env);
    registry_ = env_->registry.get();

    api::Pod pod;
    pod.mutable_metadata()->set_name("web");
    auto* c = pod.mutable_spec()->add_containers();
    c->set_name("web");
    c->set_image("soscscs/myapp:v1");
    CreateRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_object(pod.SerializeAsString());
    auto created = registry_->Create(req);
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_TRUE(created_.ParseFromString(*created));
    ASSERT_TRUE(env_->cache
                    ->WaitFor(std::stoll(created_.metadata().resource_version()),
                              std::chrono::seconds(10))
                    .ok());
    env_->cache->Stop();  // from here on the cache holds the pod as created

    // Bound behind the cache's back.
    api::Pod bound = created_;
    bound.mutable_spec()->set_node_name("node01");
    bound.mutable_metadata()->clear_resource_version();
    auto r = env_->storage->Txn(storage::UpdateTxn(
        kKey, std::stoll(created_.metadata().resource_version()), bound.SerializeAsString()));
    ASSERT_TRUE(r.ok() && r->succeeded());
    stored_rv_ = std::to_string(r->header().revision());
  }

  absl::StatusOr<std::string> UpdateStatus(const std::string& rv, const std::string& phase,
                                           Registry::Admit admit = nullptr) {
    api::Pod pod = created_;
    pod.mutable_metadata()->set_resource_version(rv);
    pod.mutable_status()->set_phase(phase);
    UpdateRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_subresource("status");
    req.set_object(pod.SerializeAsString());
    return registry_->Update(req, std::move(admit));
  }

  static constexpr char kKey[] = "/registry/pods/default/web";
  std::unique_ptr<mkube::testing::RegistryEnv> env_;
  Registry* registry_ = nullptr;
  api::Pod created_;
  std::string stored_rv_;
};

TEST_F(ReadModifyWriteTest, AnUnconditionalUpdateOnAStaleCopyIsMadeOnTheStoresCopy) {
  auto r = UpdateStatus("", "Running");
  ASSERT_TRUE(r.ok()) << r.status();
  api::Pod got;
  ASSERT_TRUE(got.ParseFromString(*r));
  EXPECT_EQ(got.status().phase(), "Running");
  EXPECT_EQ(got.spec().node_name(), "node01") << "the binding the cache never saw is kept";
}

TEST_F(ReadModifyWriteTest, AVersionNewerThanTheCachesIsCheckedAgainstTheStore) {
  auto r = UpdateStatus(stored_rv_, "Running");
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST_F(ReadModifyWriteTest, AVersionTheStoreHasMovedPastIsAConflict) {
  auto r = UpdateStatus(created_.metadata().resource_version(), "Running");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted) << r.status();
  EXPECT_NE(r.status().message().find("the object has been modified"), std::string::npos)
      << r.status();
}

// Admission (where a node's status update is judged by where the pod is bound) sees the
// object the write replaces: a refusal on the cache's stale copy is not the answer.
TEST_F(ReadModifyWriteTest, AdmissionJudgesTheObjectTheWriteReplaces) {
  std::vector<std::string> seen;
  auto bound_to = [&](const std::string& node) -> Registry::Admit {
    return [&seen, node](const google::protobuf::Message& current) {
      seen.push_back(static_cast<const api::Pod&>(current).spec().node_name());
      return seen.back() == node ? absl::OkStatus() : absl::PermissionDeniedError("elsewhere");
    };
  };
  auto r = UpdateStatus("", "Running", bound_to("node01"));
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(seen, (std::vector<std::string>{"", "node01"}));
  seen.clear();
  r = UpdateStatus("", "Failed", bound_to("node02"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(seen.back(), "node01");
}

TEST_F(ReadModifyWriteTest, BindingAPodTheCacheThinksUnboundSaysWhereItIsAssigned) {
  api::Binding binding;
  binding.mutable_metadata()->set_name("web");
  binding.mutable_target()->set_name("node02");
  CreateRequest req;
  req.set_resource("pods");
  req.set_namespace_("default");
  req.set_name("web");
  req.set_subresource("binding");
  req.set_object(binding.SerializeAsString());
  auto r = registry_->Create(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(r.status().message().find("is already assigned to node \"node01\""),
            std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace mkube::apiserver::registry
