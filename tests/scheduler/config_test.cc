// --config: a KubeSchedulerConfiguration's profiles, plugins and weights; every error with
// its line.
#include "scheduler/framework/config.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::framework {
namespace {

std::vector<std::pair<std::string, int64_t>> Scores(const Profile& p) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& s : p.scores) out.emplace_back(std::string(s.plugin->Name()), s.weight);
  return out;
}
std::vector<std::string> Filters(const Profile& p) {
  std::vector<std::string> out;
  for (const auto* f : p.filters.filters) out.emplace_back(f->Name());
  return out;
}

TEST(LoadConfig, NoConfigIsKubernetesDefaultProfile) {
  auto profiles = LoadConfig("", nullptr);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 1u);
  const Profile& p = (*profiles)[0];
  EXPECT_EQ(p.scheduler_name, "default-scheduler");
  EXPECT_EQ(p.percentage_of_nodes_to_score, 0);
  EXPECT_EQ(Filters(p), (std::vector<std::string>{"NodeUnschedulable", "NodeName",
                                                  "TaintToleration", "NodeAffinity", "NodePorts",
                                                  "NodeResourcesFit", "VolumeRestrictions",
                                                  "PodTopologySpread", "InterPodAffinity"}));
  EXPECT_EQ(Scores(p).size(), 7u);
  for (const auto& [name, weight] : Scores(p)) {
    const std::map<std::string, int64_t> want = {
        {"TaintToleration", 3},  {"NodeAffinity", 2},     {"PodTopologySpread", 2},
        {"InterPodAffinity", 2}, {"NodeResourcesFit", 1}, {"NodeResourcesBalancedAllocation", 1},
        {"ImageLocality", 1}};
    EXPECT_EQ(weight, want.at(name)) << name;
  }
}

TEST(LoadConfig, WeightsDisabledPluginsProfilesAndArgs) {
  auto profiles = LoadConfig(R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: ImageLocality
      enabled:
      - name: NodeAffinity
        weight: 10
- schedulerName: packer
  percentageOfNodesToScore: 100
  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: NodeResourcesFit
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
)",
                             nullptr);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 2u);
  const auto first = Scores((*profiles)[0]);
  EXPECT_EQ((*profiles)[0].percentage_of_nodes_to_score, 30);
  EXPECT_EQ((std::map<std::string, int64_t>(first.begin(), first.end())),
            (std::map<std::string, int64_t>{{"TaintToleration", 3},
                                            {"NodeAffinity", 10},
                                            {"NodeResourcesFit", 1},
                                            {"PodTopologySpread", 2},
                                            {"InterPodAffinity", 2},
                                            {"NodeResourcesBalancedAllocation", 1}}))
      << "ImageLocality disabled, NodeAffinity weighed 10, the rest as by default";
  EXPECT_EQ(first.size(), 6u);
  EXPECT_EQ((*profiles)[1].scheduler_name, "packer");
  EXPECT_EQ((*profiles)[1].percentage_of_nodes_to_score, 100);
  EXPECT_EQ(Scores((*profiles)[1]),
            (std::vector<std::pair<std::string, int64_t>>{{"NodeResourcesFit", 1}}));
  EXPECT_EQ(Filters((*profiles)[1]), Filters((*profiles)[0])) << "filters stay";
  // Its args took: MostAllocated prefers the fuller node.
  const ScorePlugin* packer = (*profiles)[1].scores.at(0).plugin;
  const api::Pod pod = testing::MakePod().Container({{"cpu", "1"}, {"memory", "1Gi"}}).Obj();
  auto node = [](const std::string& name) {
    return testing::MakeNode(name).Allocatable({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}});
  };
  const NodeInfo empty = node("empty").Info();
  const NodeInfo fuller =
      node("fuller")
          .Pod(testing::MakePod("x").Container({{"cpu", "2"}, {"memory", "4Gi"}}).Obj())
          .Info();
  CycleState state;
  EXPECT_GT(packer->Score(state, pod, fuller), packer->Score(state, pod, empty));
}

TEST(LoadConfig, ABrokenConfigSaysTheLineAndTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled:\n      - name: "
       "Nope\n",
       "line 6: profiles[0].plugins.score.enabled[0].name: unknown plugin \"Nope\""},
      {"profiles:\n- schedulerName: a\n  plugin: {}\n",
       "line 3: profiles[0]: unknown field \"plugin\""},
      {"percentageOfNodesToScore: 120\n",
       "line 1: percentageOfNodesToScore: must be between 0 and 100"},
      {"profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeAffinity\n        "
       "weight: x\n",
       "line 6: profiles[0].plugins.score.enabled[0].weight: expected an integer"},
      {"profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeName\n",
       "line 5: profiles[0].plugins.score.enabled[0]: NodeName does not score"},
      {"profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
       "        type: Fancy\n",
       "line 6: pluginConfig NodeResourcesFit: scoringStrategy.type: unsupported value \"Fancy\""},
      {"profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n"
       "      hardPodAffinityWeight: 101\n",
       "line 5: pluginConfig InterPodAffinity: hardPodAffinityWeight: must be an integer from 0 "
       "to 100"},
      {"profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n"
       "      defaultConstraints:\n      - {maxSkew: 1, topologyKey: zone, "
       "whenUnsatisfiable: DoNotSchedule}\n",
       "line 6: pluginConfig PodTopologySpread: defaultConstraints: must be empty when "
       "defaultingType is System"},
      {"profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n"
       "      defaultingType: List\n      defaultConstraints:\n      - {maxSkew: 0, "
       "topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
       "line 7: pluginConfig PodTopologySpread: defaultConstraints[0].maxSkew: must be greater "
       "than zero"},
      {"profiles: [a, b\n", "line 2: "},
      {"kind: Pod\n", "line 1: kind: want KubeSchedulerConfiguration, not \"Pod\""},
      {"profiles:\n- schedulerName: a\n- schedulerName: a\n",
       "line 3: profiles[1].schedulerName: \"a\" is used by two profiles"},
  };
  for (const auto& [text, want] : cases) {
    auto profiles = LoadConfig(text, nullptr);
    ASSERT_FALSE(profiles.ok()) << text;
    EXPECT_EQ(std::string(profiles.status().message()).rfind(want, 0), 0u)
        << "got: " << profiles.status().message() << "\nwant: " << want;
  }
}

}  // namespace
}  // namespace mkube::scheduler::framework
