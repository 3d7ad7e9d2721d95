#include "api/fields.h"

#include <gtest/gtest.h>

#include "proto/api/core.pb.h"

namespace mkube::api {
namespace {

TEST(FieldSelector, MatchesPodsLikeTheAgentAndSchedulerAsk) {
  Pod bound, unbound;
  bound.mutable_metadata()->set_name("a");
  bound.mutable_spec()->set_node_name("node01");
  bound.mutable_status()->set_phase("Running");
  unbound.mutable_metadata()->set_name("b");
  unbound.mutable_status()->set_phase("Pending");
  struct Case {
    const char* selector;
    bool bound, unbound;
  };
  for (const Case& c : std::vector<Case>{
           {"spec.nodeName=node01", true, false},
           {"spec.nodeName=", false, true},
           {"spec.nodeName!=", true, false},
           {"status.phase!=Running,status.phase!=Succeeded", false, true},
           {"metadata.name==a", true, false},
           {"", true, true},
       }) {
    auto s = FieldSelector::Parse(c.selector);
    ASSERT_TRUE(s.ok()) << c.selector;
    EXPECT_EQ(s->Matches(bound), c.bound) << c.selector;
    EXPECT_EQ(s->Matches(unbound), c.unbound) << c.selector;
  }
  Node node;
  node.mutable_spec()->set_unschedulable(true);
  EXPECT_TRUE(FieldSelector::Parse("spec.unschedulable=true")->Matches(node));
}

TEST(FieldSelector, SupportedFieldsAndSyntax) {
  const KindInfo* pods = FindResource("pods");
  EXPECT_TRUE(FieldSelector::Parse("spec.nodeName=x,status.phase=Running")
                  ->CheckSupported(*pods)
                  .ok());
  auto unsupported = FieldSelector::Parse("spec.containers=x")->CheckSupported(*pods);
  EXPECT_EQ(unsupported.message(), "field label not supported: spec.containers");
  EXPECT_FALSE(FieldSelector::Parse("spec.nodeName").ok()) << "a term needs an operator";
  EXPECT_FALSE(FieldSelector::Parse("=x").ok());
  EXPECT_EQ(FieldValue(Pod(), "spec.containers"), std::nullopt);
  EXPECT_EQ(FieldValue(Pod(), "spec.nodeName"), "");
}

}  // namespace
}  // namespace mkube::api
