#include "cli/args.h"

#include <gtest/gtest.h>

namespace mkube::cli {
namespace {

struct TaintCase {
  std::string spec;
  std::string key, value, effect;
  bool remove;
  std::string error;  // empty: valid
};

TEST(ParseTaintTest, TheSeedsFormsAndTheMalformed) {
  const std::vector<TaintCase> cases = {
      {"cht=mycht:NoExecute", "cht", "mycht", "NoExecute", false, ""},
      {"key1:NoSchedule-", "key1", "", "NoSchedule", true, ""},
      {"cht=mycht:NoExecute-", "cht", "mycht", "NoExecute", true, ""},
      {"check-", "check", "", "", true, ""},
      {"node-role.kubernetes.io/master:PreferNoSchedule", "node-role.kubernetes.io/master", "",
       "PreferNoSchedule", false, ""},
      {"cht=mycht", "", "", "", false, "invalid taint spec: cht=mycht"},
      {"cht=mycht:", "", "", "", false, "invalid taint spec: cht=mycht:"},
      {"=x:NoSchedule", "", "", "", false, "invalid taint spec: =x:NoSchedule"},
      {"cht=x:Sometimes", "", "", "", false,
       "invalid taint spec: cht=x:Sometimes, unsupported taint effect \"Sometimes\""},
      {"role=kubernetes.io/master:PreferNoSchedule", "", "", "", false,
       "invalid taint spec: role=kubernetes.io/master:PreferNoSchedule, "},
      {"bad key!:NoSchedule", "", "", "", false, "invalid taint spec: bad key!:NoSchedule, "},
  };
  for (const auto& c : cases) {
    auto t = ParseTaint(c.spec);
    if (c.error.empty()) {
      ASSERT_TRUE(t.ok()) << c.spec << ": " << t.status();
      EXPECT_EQ(t->key, c.key) << c.spec;
      EXPECT_EQ(t->value, c.value) << c.spec;
      EXPECT_EQ(t->effect, c.effect) << c.spec;
      EXPECT_EQ(t->remove, c.remove) << c.spec;
    } else {
      ASSERT_FALSE(t.ok()) << c.spec;
      EXPECT_EQ(std::string(t.status().message()).substr(0, c.error.size()), c.error) << t.status();
    }
  }
}

TEST(ParseDurationTest, KubectlForms) {
  EXPECT_EQ(*ParseDuration("0", "--timeout"), std::chrono::seconds(0));
  EXPECT_EQ(*ParseDuration("", "--timeout"), std::chrono::seconds(0));
  EXPECT_EQ(*ParseDuration("45", "--timeout"), std::chrono::seconds(45));
  EXPECT_EQ(*ParseDuration("30s", "--timeout"), std::chrono::seconds(30));
  EXPECT_EQ(*ParseDuration("2m", "--timeout"), std::chrono::seconds(120));
  EXPECT_EQ(*ParseDuration("1h", "--timeout"), std::chrono::seconds(3600));
  for (const char* bad : {"soon", "5d", "-3s", "1.5h"}) {
    auto d = ParseDuration(bad, "--timeout");
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().message(), std::string("invalid argument \"") + bad +
                                        "\" for \"--timeout\" flag: time: invalid duration \"" +
                                        bad + "\"");
  }
}

}  // namespace
}  // namespace mkube::cli
