#include "api/codec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/kinds.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::api {
namespace {

std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::filesystem::path kSeeds = std::filesystem::path(MKUBE_TEST_DATA) / "seed";

// Every seed manifest decodes, and encoding then decoding again gives the same message.
TEST(Codec, SeedManifestsDecodeAndRoundTrip) {
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSeeds)) {
    SCOPED_TRACE(entry.path().filename().string());
    auto objs = DecodeManifests(ReadText(entry.path()));
    ASSERT_TRUE(objs.ok()) << objs.status();
    ASSERT_EQ(objs->size(), 1u);
    const Object& obj = (*objs)[0];
    for (const std::string& text : {ToYaml(*obj.message), ToJson(*obj.message)}) {
      auto again = DecodeManifests(text);
      ASSERT_TRUE(again.ok()) << again.status() << "\n" << text;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*obj.message,
                                                                     *(*again)[0].message))
          << text;
    }
    ++seen;
  }
  EXPECT_GE(seen, 11);
}

TEST(Codec, FieldsLandWhereKubernetesPutsThem) {
  auto objs = DecodeManifests(ReadText(kSeeds / "demo01.yaml"));
  ASSERT_TRUE(objs.ok());
  const auto& pod = static_cast<const Pod&>(*(*objs)[0].message);
  EXPECT_EQ(pod.api_version(), "v1");
  EXPECT_EQ(pod.metadata().name(), "myapp01");
  ASSERT_EQ(pod.spec().tolerations_size(), 1);
  EXPECT_EQ(pod.spec().tolerations(0).key(), "cht");
  EXPECT_EQ(pod.spec().tolerations(0).effect(), "NoExecute");
  EXPECT_EQ(pod.spec().tolerations(0).toleration_seconds(), 3600);

  auto legacy = DecodeManifests(ReadText(kSeeds / "myapp.yaml"));
  ASSERT_TRUE(legacy.ok());
  const auto& deploy = static_cast<const Deployment&>(*(*legacy)[0].message);
  EXPECT_EQ((*legacy)[0].written_api_version, "extensions/v1beta1");
  EXPECT_EQ(deploy.api_version(), "extensions/v1beta1") << "kept as written for the server";
  EXPECT_EQ(WrittenApiVersion(*(*legacy)[0].info, deploy), "extensions/v1beta1");
  api::Deployment other_version = deploy;
  other_version.set_api_version("v1");  // not a version Deployments come in
  EXPECT_EQ(WrittenApiVersion(*(*legacy)[0].info, other_version), "apps/v1");
  EXPECT_EQ(deploy.spec().replicas(), 3);
  EXPECT_EQ(deploy.spec().template_().spec().node_name(), "node02");
  EXPECT_EQ(deploy.spec().template_().spec().containers(0).ports(0).container_port(), 80);

  auto all = DecodeManifests(ReadText(kSeeds / "tolerate-all.yaml"));
  ASSERT_TRUE(all.ok());
  const auto& p = static_cast<const Pod&>(*(*all)[0].message);
  EXPECT_EQ(p.spec().containers(0).resources().limits().at("cpu"), "1") << "numbers as written";
  EXPECT_EQ(p.spec().containers(0).command_size(), 2);
}

TEST(Codec, MultiDocumentStreamsAndJson) {
  const std::string stream =
      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n"
      "apiVersion: v1\nkind: Node\nmetadata:\n  name: node01\nspec:\n  taints:\n"
      "  - key: k\n    value: v\n    effect: NoSchedule\n---\n";
  auto objs = DecodeManifests(stream);
  ASSERT_TRUE(objs.ok()) << objs.status();
  ASSERT_EQ(objs->size(), 2u);
  EXPECT_EQ((*objs)[0].info->kind, "Namespace");
  EXPECT_EQ((*objs)[1].info->resource, "nodes");
  auto json = DecodeManifests(
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},)"
      R"("spec":{"replicas":2,"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":1}}}})");
  ASSERT_TRUE(json.ok()) << json.status();
  const auto& d = static_cast<const Deployment&>(*(*json)[0].message);
  EXPECT_EQ(d.spec().strategy().rolling_update().max_surge().string_value(), "25%");
  EXPECT_EQ(d.spec().strategy().rolling_update().max_unavailable().int_value(), 1);
  const std::string out = ToJson(d, false);
  EXPECT_NE(out.find(R"("maxSurge":"25%")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("maxUnavailable":1)"), std::string::npos) << out;
}

TEST(Codec, BadManifestsNameTheProblem) {
  struct Case {
    const char* name;
    std::string text;
    std::string error;
  };
  const std::string pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n";
  const std::vector<Case> cases = {
      {"unknown field", pod + "  - name: c\n    imagee: x\n",
       "unknown field \"spec.containers[0].imagee\""},
      {"wrong type for an integer", pod + "  - name: c\n    ports:\n    - containerPort: eighty\n",
       "spec.containers[0].ports[0].containerPort: expected an integer, got \"eighty\""},
      {"quoted integer", pod + "  - name: c\n    ports:\n    - containerPort: \"80\"\n",
       "spec.containers[0].ports[0].containerPort: expected an integer, got \"80\""},
      {"a list where a map belongs", pod + "  - name: c\n    resources: [1]\n",
       "spec.containers[0].resources: expected a map, got a list"},
      {"a number where a string belongs", pod + "  - name: 7\n",
       "spec.containers[0].name: expected a string, got \"7\""},
      {"a map where a list belongs", pod + "    name: c\n",
       "spec.containers: expected a list, got a map"},
      {"unknown kind", "apiVersion: v1\nkind: Pdo\nmetadata:\n  name: x\n",
       "no matches for kind \"Pdo\" in version \"v1\""},
      {"missing kind", "apiVersion: v1\nmetadata:\n  name: x\n", "Object 'Kind' is missing"},
      {"invalid YAML", "apiVersion: v1\nkind: Pod\nmetadata: [\n", "invalid YAML at line"},
  };
  for (const auto& c : cases) {
    auto r = DecodeManifests(c.text);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(std::string(r.status().message()).find(c.error), std::string::npos)
        << c.name << ": " << r.status().message();
  }
}

TEST(Kinds, UsersNamesResolve) {
  struct Case {
    const char* typed;
    const char* kind;
  };
  for (const Case& c : std::vector<Case>{{"pods", "Pod"}, {"po", "Pod"}, {"pod", "Pod"},
                                         {"no", "Node"}, {"deploy", "Deployment"},
                                         {"deployments.apps", "Deployment"}, {"rs", "ReplicaSet"},
                                         {"ds", "DaemonSet"}, {"ev", "Event"}, {"ns", "Namespace"},
                                         {"leases", "Lease"}, {"jobs", "Job"},
                                         {"rc", "ReplicationController"}}) {
    const KindInfo* k = FindResource(c.typed);
    ASSERT_NE(k, nullptr) << c.typed;
    EXPECT_EQ(k->kind, c.kind) << c.typed;
  }
  EXPECT_EQ(FindResource("pdos"), nullptr);
  EXPECT_FALSE(FindResource("nodes")->namespaced);
  EXPECT_EQ(FindKind("apps/v1beta1", "Deployment")->api_version(), "apps/v1");
}

}  // namespace
}  // namespace mkube::api
