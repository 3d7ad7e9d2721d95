#include "api/taints.h"

#include <gtest/gtest.h>

namespace mkube::api {
namespace {

TEST(Tolerates, AsKubernetesMatchesTaints) {
  struct Case {
    std::string name;
    std::string key, op, value, effect;  // the toleration
    bool tolerates;
  } cases[] = {
      {"Equal with the same key, value and effect", "dedicated", "Equal", "gpu", "NoSchedule",
       true},
      {"no operator means Equal", "dedicated", "", "gpu", "NoSchedule", true},
      {"Equal with another value", "dedicated", "Equal", "cpu", "NoSchedule", false},
      {"Exists ignores the value", "dedicated", "Exists", "", "NoSchedule", true},
      {"another key", "other", "Exists", "", "NoSchedule", false},
      {"an empty effect matches every effect", "dedicated", "Equal", "gpu", "", true},
      {"another effect", "dedicated", "Equal", "gpu", "NoExecute", false},
      {"an empty key with Exists tolerates everything", "", "Exists", "", "", true},
      {"an empty key with Exists and an effect tolerates that effect", "", "Exists", "",
       "NoSchedule", true},
      {"an empty key with Exists and another effect", "", "Exists", "", "PreferNoSchedule", false},
      {"an unknown operator tolerates nothing", "dedicated", "In", "gpu", "NoSchedule", false},
  };
  api::Taint taint;
  taint.set_key("dedicated");
  taint.set_value("gpu");
  taint.set_effect("NoSchedule");
  for (const auto& c : cases) {
    api::Toleration t;
    t.set_key(c.key);
    t.set_operator_(c.op);
    t.set_value(c.value);
    t.set_effect(c.effect);
    EXPECT_EQ(Tolerates(t, taint), c.tolerates) << c.name;
  }
}

}  // namespace
}  // namespace mkube::api
