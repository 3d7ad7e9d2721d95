// Strategic merge, JSON patch and the merge patch between two objects.
#include "api/patch.h"

#include <gtest/gtest.h>

namespace mkube::api {
namespace {

PatchJson J(const char* text) { return PatchJson::parse(text); }

TEST(StrategicMergePatch, MergesKeyedListsAndReplacesTheRest) {
  const PatchJson pod = J(R"({"spec": {
      "containers": [{"name": "a", "image": "v1", "ports": [{"containerPort": 80}]},
                     {"name": "b", "image": "v1"}],
      "tolerations": [{"key": "x"}]}})");
  struct Case {
    const char* patch;
    const char* want;
  };
  const Case cases[] = {
      // One container's image: the other container and the ports stay.
      {R"({"spec": {"containers": [{"name": "a", "image": "v2"}]}})",
       R"({"spec": {"containers": [{"name": "a", "image": "v2", "ports": [{"containerPort": 80}]},
                                   {"name": "b", "image": "v1"}],
                    "tolerations": [{"key": "x"}]}})"},
      // A new one is added; "$patch": "delete" removes by key.
      {R"({"spec": {"containers": [{"name": "c", "image": "v1"}, {"name": "b", "$patch": "delete"}]}})",
       R"({"spec": {"containers": [{"name": "a", "image": "v1", "ports": [{"containerPort": 80}]},
                                   {"name": "c", "image": "v1"}],
                    "tolerations": [{"key": "x"}]}})"},
      // Lists without a merge key are replaced; null removes a field.
      {R"({"spec": {"tolerations": [{"key": "y"}], "containers": null}})",
       R"({"spec": {"tolerations": [{"key": "y"}]}})"},
  };
  for (const auto& c : cases) {
    auto got = ApplyStrategicMergePatch(pod, J(c.patch));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, J(c.want)) << c.patch;
  }
  EXPECT_FALSE(ApplyStrategicMergePatch(pod, J("[1]")).ok());
}

TEST(JsonPatch, AppliesOperationsAndNamesWhatFails) {
  const PatchJson d = J(R"({"spec": {"replicas": 3, "list": [1, 2]}})");
  auto got = ApplyJsonPatch(d, J(R"([{"op": "replace", "path": "/spec/replicas", "value": 1},
                                      {"op": "add", "path": "/spec/list/-", "value": 3},
                                      {"op": "remove", "path": "/spec/list/0"}])"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, J(R"({"spec": {"replicas": 1, "list": [2, 3]}})"));
  auto bad = ApplyJsonPatch(d, J(R"([{"op": "remove", "path": "/spec/nothing"}])"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "key 'nothing' not found");
  EXPECT_FALSE(ApplyJsonPatch(d, J(R"({"op": "remove"})")).ok());
}

TEST(MergePatchBetween, HoldsOnlyWhatChanged) {
  const PatchJson a = J(R"({"a": 1, "b": {"c": 2, "d": 3}, "e": [1]})");
  const PatchJson b = J(R"({"a": 1, "b": {"c": 2, "d": 4}, "e": [1, 2], "f": true})");
  const PatchJson diff = MergePatchBetween(a, b);
  EXPECT_EQ(diff, J(R"({"b": {"d": 4}, "e": [1, 2], "f": true})"));
  PatchJson applied = a;
  applied.merge_patch(diff);
  EXPECT_EQ(applied, b);
  // Key order aside (the removals come first).
  EXPECT_EQ(nlohmann::json::parse(MergePatchBetween(b, a).dump()),
            nlohmann::json::parse(R"({"b": {"d": 3}, "e": [1], "f": null})"));
  EXPECT_TRUE(MergePatchBetween(a, a).empty());
}

}  // namespace
}  // namespace mkube::api
