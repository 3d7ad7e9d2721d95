#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::testing {

// One row of a score plugin's table: a sentence, the pod, the nodes, and each node's score
// after NormalizeScore (empty: the plugin skips the pod).
struct ScoreCase {
  std::string name;
  api::Pod pod;
  std::vector<framework::NodeInfoPtr> nodes;
  std::vector<int64_t> want;
};

inline void RunScoreTable(const framework::ScorePlugin& plugin,
                          const std::vector<ScoreCase>& cases) {
  for (const auto& c : cases) {
    framework::Snapshot snapshot(c.nodes);
    std::vector<const framework::NodeInfo*> nodes;
    for (const auto& n : c.nodes) nodes.push_back(n.get());
    framework::CycleState state;
    if (auto* pre = dynamic_cast<const framework::PreScorePlugin*>(&plugin)) {
      const framework::Status st = pre->PreScore(state, c.pod, nodes, snapshot);
      if (st.skip()) {
        EXPECT_TRUE(c.want.empty()) << plugin.Name() << ": skipped: " << c.name;
        continue;
      }
      ASSERT_TRUE(st.ok()) << c.name;
    }
    ASSERT_FALSE(c.want.empty()) << plugin.Name() << ": not skipped: " << c.name;
    std::vector<int64_t> scores;
    for (const auto* n : nodes) scores.push_back(plugin.Score(state, c.pod, *n));
    plugin.NormalizeScore(state, c.pod, scores);
    EXPECT_EQ(scores, c.want) << plugin.Name() << ": " << c.name;
  }
}

}  // namespace mkube::scheduler::testing
