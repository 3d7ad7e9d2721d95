// metadata.generation counts changes of the spec, and nothing else: objects whose specs are
// full of maps (labels, nodeSelector, resources) keep their generation through metadata and
// status writes, and gain exactly one per real spec change. And a name made from
// metadata.generateName.
#include <gtest/gtest.h>

#include "proto/api/apps.pb.h"
#include "tests/apiserver/registry_env.h"

namespace mkube::apiserver::registry {
namespace {

class GenerationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = mkube::testing::RegistryEnv::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = std::move(*env);
    registry_ = env_->registry.get();
  }

  // A Deployment whose template is map-heavy: 4 labels, 3 nodeSelector entries, requests
  // and limits.
  static api::Deployment MapHeavy() {
    api::Deployment d;
    d.mutable_metadata()->set_name("web");
    auto* spec = d.mutable_spec();
    spec->set_replicas(2);
    auto* tmpl = spec->mutable_template_();
    for (const char* k : {"app", "tier", "track", "team"}) {
      (*spec->mutable_selector()->mutable_match_labels())[k] = std::string(k) + "-v";
      (*tmpl->mutable_metadata()->mutable_labels())[k] = std::string(k) + "-v";
    }
    for (const char* k : {"disktype", "zone", "rack"}) {
      (*tmpl->mutable_spec()->mutable_node_selector())[k] = std::string(k) + "-v";
    }
    auto* c = tmpl->mutable_spec()->add_containers();
    c->set_name("web");
    c->set_image("soscscs/myapp:v1");
    for (const char* r : {"cpu", "memory", "ephemeral-storage"}) {
      (*c->mutable_resources()->mutable_requests())[r] = "1";
      (*c->mutable_resources()->mutable_limits())[r] = "2";
    }
    return d;
  }

  api::Deployment Create(const api::Deployment& d) {
    CreateRequest req;
    req.set_resource("deployments");
    req.set_namespace_("default");
    req.set_object(d.SerializeAsString());
    return Parse(registry_->Create(req));
  }
  api::Deployment Patch(const std::string& patch, const std::string& subresource = "") {
    PatchRequest req;
    req.set_resource("deployments");
    req.set_namespace_("default");
    req.set_name("web");
    req.set_subresource(subresource);
    req.set_merge_patch(patch);
    return Parse(registry_->Patch(req));
  }
  api::Deployment Update(const api::Deployment& d, const std::string& subresource = "") {
    UpdateRequest req;
    req.set_resource("deployments");
    req.set_namespace_("default");
    req.set_subresource(subresource);
    req.set_object(d.SerializeAsString());
    return Parse(registry_->Update(req));
  }
  static api::Deployment Parse(const absl::StatusOr<std::string>& bytes) {
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    api::Deployment d;
    if (bytes.ok()) {
      EXPECT_TRUE(d.ParseFromString(*bytes));
    }
    return d;
  }

  std::unique_ptr<mkube::testing::RegistryEnv> env_;
  Registry* registry_ = nullptr;
};

TEST_F(GenerationTest, MetadataAndStatusWritesKeepTheGeneration) {
  EXPECT_EQ(Create(MapHeavy()).metadata().generation(), 1);
  for (int i = 0; i < 5; ++i) {
    const auto d = Patch(R"({"metadata":{"annotations":{"note":"n)" + std::to_string(i) + R"("}}})");
    EXPECT_EQ(d.metadata().generation(), 1) << "after annotation " << i;
  }
  EXPECT_EQ(Patch(R"({"metadata":{"labels":{"owner":"me"}}})").metadata().generation(), 1);
  EXPECT_EQ(Patch(R"({"status":{"observedGeneration":1,"replicas":2}})", "status")
                .metadata()
                .generation(),
            1);
  // A whole-object update that sends the spec back unchanged, rebuilt from scratch (so its
  // maps are filled in another order).
  api::Deployment same = MapHeavy();
  EXPECT_EQ(Update(same).metadata().generation(), 1);
}

TEST_F(GenerationTest, EachRealSpecChangeBumpsItOnce) {
  Create(MapHeavy());
  EXPECT_EQ(Patch(R"({"spec":{"replicas":3}})").metadata().generation(), 2);
  EXPECT_EQ(Patch(R"({"spec":{"template":{"spec":{"nodeSelector":{"zone":"b"}}}}})")
                .metadata()
                .generation(),
            3);
  EXPECT_EQ(Patch(R"({"metadata":{"annotations":{"a":"b"}}})").metadata().generation(), 3);
  api::Deployment changed = MapHeavy();
  (*changed.mutable_spec()->mutable_template_()->mutable_metadata()->mutable_labels())["extra"] =
      "x";
  (*changed.mutable_spec()->mutable_selector()->mutable_match_labels()).erase("team");
  EXPECT_EQ(Update(changed).metadata().generation(), 4);
}

// As Kubernetes' name generator: at most 58 characters of the prefix, then 5 random ones, so
// that the name fits a DNS label (63) whatever the prefix.
TEST_F(GenerationTest, AGeneratedNameIsThePrefixCutTo58AndFiveRandomCharacters) {
  for (const std::string& prefix : {std::string("web-"), std::string(57, 'w') + "-",
                                   std::string(100, 'w') + "-"}) {
    SCOPED_TRACE(prefix.size());
    api::Deployment d = MapHeavy();
    d.mutable_metadata()->clear_name();
    d.mutable_metadata()->set_generate_name(prefix);
    const auto made = Create(d);
    const std::string& name = made.metadata().name();
    const std::string base = prefix.substr(0, 58);
    ASSERT_EQ(name.size(), base.size() + 5) << name;
    EXPECT_EQ(name.substr(0, base.size()), base);
    EXPECT_EQ(made.metadata().generate_name(), prefix);
  }
}

}  // namespace
}  // namespace mkube::apiserver::registry
