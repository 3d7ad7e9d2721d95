#include "api/managed_fields.h"

#include <gtest/gtest.h>

#include "absl/strings/cord.h"
#include "api/codec.h"
#include "proto/api/apps.pb.h"

namespace mkube::api {
namespace {

PatchJson J(const char* text) { return PatchJson::parse(text); }

const Manager kApplier{.name = "applier", .api_version = "apps/v1", .time = "2026-12-06T22:00:00Z"};
const Manager kEditor{.name = "kubectl-edit", .api_version = "apps/v1", .time = "2026-12-06T22:01:00Z"};

TEST(ManagedFields, FieldsOfAConfigurationAreItsLeavesAndKeyedElements) {
  FieldSet f = FieldsOf(J(R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"web","labels":{"app":"web"},"finalizers":["a"]},
      "spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1"}],
      "tolerations":[{"key":"k"}]}}},"status":{"replicas":1}})"));
  PatchJson v1 = ToFieldsV1(f);
  EXPECT_EQ(v1, J(R"({"f:metadata":{"f:finalizers":{"v:\"a\"":{}},"f:labels":{"f:app":{}}},
      "f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":
      {".":{},"f:image":{},"f:name":{}}},"f:tolerations":{}}}}})"))
      << v1.dump();
  EXPECT_EQ(FromFieldsV1(v1), f);
  EXPECT_EQ(PathString({"f:spec", "f:template", "f:spec", "f:containers", "k:{\"name\":\"nginx\"}",
                        "f:image"}),
            ".spec.template.spec.containers[name=\"nginx\"].image");
}

TEST(ManagedFields, AnUpdateTakesTheFieldsItChanges) {
  PatchJson before = J(R"({"metadata":{"name":"web"},"spec":{"replicas":2,"paused":false}})");
  PatchJson created = before;
  RecordUpdate(nullptr, &created, {.name = "kubectl-create", .api_version = "apps/v1", .time = "t0"});
  ASSERT_EQ(created["metadata"]["managedFields"].size(), 1u);
  EXPECT_EQ(created["metadata"]["managedFields"][0]["fieldsV1"],
            J(R"({"f:spec":{"f:paused":{},"f:replicas":{}}})"));
  PatchJson after = created;
  after["spec"]["replicas"] = 5;
  RecordUpdate(&created, &after, kEditor);
  const auto& mf = after["metadata"]["managedFields"];
  ASSERT_EQ(mf.size(), 2u) << mf.dump();
  EXPECT_EQ(mf[0]["fieldsV1"], J(R"({"f:spec":{"f:paused":{}}})"));
  EXPECT_EQ(mf[1]["manager"], "kubectl-edit");
  EXPECT_EQ(mf[1]["operation"], "Update");
  EXPECT_EQ(mf[1]["fieldsV1"], J(R"({"f:spec":{"f:replicas":{}}})"));
}

TEST(ManagedFields, ApplyingAFieldAnotherManagerSetOtherwiseConflictsUnlessForced) {
  PatchJson live = J(R"({"metadata":{"name":"web"},"spec":{"replicas":2,"paused":false}})");
  RecordUpdate(nullptr, &live, kEditor);
  // The same value: shared, no conflict.
  auto same = ServerSideApply(live, J(R"({"metadata":{"name":"web"},"spec":{"replicas":2}})"), kApplier, false);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ((*same)["metadata"]["managedFields"].size(), 2u);
  // Another value: a conflict, named as Kubernetes names it.
  auto other = ServerSideApply(live, J(R"({"spec":{"replicas":3,"paused":true}})"), kApplier, false);
  ASSERT_EQ(other.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(other.status().message(),
            "Apply failed with 2 conflicts: conflicts with \"kubectl-edit\" using apps/v1:\n"
            "- .spec.paused\n- .spec.replicas");
  auto causes = other.status().GetPayload(kConflictsPayload);
  ASSERT_TRUE(causes.has_value());
  EXPECT_EQ(J(std::string(*causes).c_str())[0]["field"], ".spec.paused");
  auto one = ServerSideApply(live, J(R"({"spec":{"replicas":3}})"), kApplier, false);
  EXPECT_EQ(one.status().message(),
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using apps/v1: .spec.replicas");
  // Forced: the applier takes the field, the editor keeps the rest.
  auto forced = ServerSideApply(live, J(R"({"spec":{"replicas":3}})"), kApplier, true);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ((*forced)["spec"]["replicas"], 3);
  const auto& mf = (*forced)["metadata"]["managedFields"];
  EXPECT_EQ(mf[0]["fieldsV1"], J(R"({"f:spec":{"f:paused":{}}})"));
  EXPECT_EQ(mf[1]["manager"], "applier");
  EXPECT_EQ(mf[1]["operation"], "Apply");
  EXPECT_EQ(mf[1]["fieldsV1"], J(R"({"f:spec":{"f:replicas":{}}})"));
}

TEST(ManagedFields, FieldsAnApplierStopsApplyingGoUnlessAnotherOwnsThem) {
  PatchJson live = J(R"({"metadata":{"name":"web"}})");
  auto first = ServerSideApply(live, J(R"({"metadata":{"labels":{"a":"1","b":"2"}},
      "spec":{"template":{"spec":{"containers":[{"name":"x","image":"i"},{"name":"y","image":"j"}]}}}})"),
      kApplier, false);
  ASSERT_TRUE(first.ok()) << first.status();
  // Someone else adds a label of its own.
  PatchJson edited = *first;
  edited["metadata"]["labels"]["c"] = "3";
  RecordUpdate(&*first, &edited, kEditor);
  auto second = ServerSideApply(edited, J(R"({"spec":{"template":{"spec":{"containers":[{"name":"x","image":"i"}]}}}})"),
                                kApplier, false);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)["metadata"]["labels"], J(R"({"c":"3"})"));
  EXPECT_EQ((*second)["spec"]["template"]["spec"]["containers"],
            J(R"([{"name":"x","image":"i"}])"));
}

TEST(ManagedFields, MessagesKeepTheirManagedFieldsThroughTheCodec) {
  Deployment d;
  d.mutable_metadata()->set_name("web");
  d.mutable_spec()->set_replicas(2);
  ASSERT_TRUE(RecordManager(nullptr, &d, kEditor).ok());
  ASSERT_EQ(d.metadata().managed_fields_size(), 1);
  EXPECT_EQ(EncodeJson(d)["metadata"]["managedFields"][0]["fieldsV1"], J(R"({"f:spec":{"f:replicas":{}}})"));
  Deployment back;
  ASSERT_TRUE(DecodeNode(YAML::Load(EncodeJson(d).dump()), &back).ok());
  EXPECT_EQ(back.metadata().managed_fields(0).fields_v1().json(), R"({"f:spec":{"f:replicas":{}}})");
  auto applied = ApplyConfiguration(d, "spec:\n  replicas: 4\n", kApplier, false);
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kAborted);
}

}  // namespace
}  // namespace mkube::api
