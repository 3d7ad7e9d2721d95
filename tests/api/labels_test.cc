#include "api/labels.h"

#include <gtest/gtest.h>

namespace mkube::api {
namespace {

google::protobuf::Map<std::string, std::string> Labels(
    std::initializer_list<std::pair<const std::string, std::string>> kv) {
  google::protobuf::Map<std::string, std::string> m;
  for (const auto& [k, v] : kv) m[k] = v;
  return m;
}

TEST(Selector, ParsesAndMatchesKubectlSyntax) {
  const auto web = Labels({{"app", "web"}, {"tier", "front"}, {"env", "prod"}});
  const auto db = Labels({{"app", "db"}, {"legacy", "yes"}});
  struct Case {
    const char* selector;
    bool web, db;
  };
  const std::vector<Case> cases = {
      {"", true, true},
      {"app=web", true, false},
      {"app==web", true, false},
      {"app!=web", false, true},
      {"app in (web, db)", true, true},
      {"app notin (web)", false, true},
      {"env in (prod,staging),tier", true, false},
      {"!legacy", true, false},
      {"legacy", false, true},
      {"app=web,!legacy", true, false},
      {"missing!=x", true, true},
  };
  for (const auto& c : cases) {
    auto s = Selector::Parse(c.selector);
    ASSERT_TRUE(s.ok()) << c.selector << ": " << s.status();
    EXPECT_EQ(s->Matches(web), c.web) << c.selector;
    EXPECT_EQ(s->Matches(db), c.db) << c.selector;
  }
  EXPECT_EQ(Selector::Parse("app in (a,b),!x")->String(), "app in (a,b),!x");
}

TEST(Selector, RejectsMalformed) {
  for (const char* bad : {"app in ()", "app=we b", ",", "app in (a", "-app=x", "app=x,,b=c",
                          "app foo (a)"}) {
    EXPECT_FALSE(Selector::Parse(bad).ok()) << bad;
  }
}

TEST(Selector, LabelSelectorsAndNodeSelectorTerms) {
  LabelSelector ls;
  (*ls.mutable_match_labels())["app"] = "myapp01";
  auto* e = ls.add_match_expressions();
  e->set_key("tier");
  e->set_operator_("NotIn");
  e->add_values("db");
  auto s = Selector::FromLabelSelector(ls);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Matches(Labels({{"app", "myapp01"}})));
  EXPECT_FALSE(s->Matches(Labels({{"app", "myapp01"}, {"tier", "db"}})));

  NodeSelectorTerm term;
  auto* gt = term.add_match_expressions();
  gt->set_key("cores");
  gt->set_operator_("Gt");
  gt->add_values("4");
  auto* notin = term.add_match_expressions();
  notin->set_key("kubernetes.io/hostname");
  notin->set_operator_("NotIn");
  notin->add_values("node02");
  auto n = Selector::FromNodeSelectorTerm(term);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE(n->Matches(Labels({{"cores", "8"}, {"kubernetes.io/hostname", "node01"}})));
  EXPECT_FALSE(n->Matches(Labels({{"cores", "8"}, {"kubernetes.io/hostname", "node02"}})));
  EXPECT_FALSE(n->Matches(Labels({{"cores", "2"}})));
  EXPECT_FALSE(n->Matches(Labels({{"cores", "many"}})));

  LabelSelector bad;
  auto* b = bad.add_match_expressions();
  b->set_key("app");
  b->set_operator_("Gt");
  b->add_values("1");
  EXPECT_FALSE(Selector::FromLabelSelector(bad).ok()) << "Gt is for node selectors only";
  NodeSelectorTerm bad_gt;
  auto* g = bad_gt.add_match_expressions();
  g->set_key("cores");
  g->set_operator_("Gt");
  g->add_values("four");
  EXPECT_FALSE(Selector::FromNodeSelectorTerm(bad_gt).ok());
}

TEST(Labels, KeyAndValueSyntax) {
  for (const char* ok : {"app", "kubernetes.io/hostname", "node-role.kubernetes.io/master",
                         "a.b_c-d", "example.com/x"}) {
    EXPECT_TRUE(ValidateLabelKey(ok).ok()) << ok;
  }
  const std::vector<std::string> bad_keys = {"", "-app", "app-", "Example.com/x", "a/b/c", "/x",
                                             std::string(64, 'a')};
  for (const auto& bad : bad_keys) {
    EXPECT_FALSE(ValidateLabelKey(bad).ok()) << bad;
  }
  EXPECT_TRUE(ValidateLabelValue("").ok());
  EXPECT_TRUE(ValidateLabelValue("v1.2_x-y").ok());
  EXPECT_FALSE(ValidateLabelValue("has space").ok());
  EXPECT_FALSE(ValidateLabelValue("-lead").ok());
}

}  // namespace
}  // namespace mkube::api
