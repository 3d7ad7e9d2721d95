#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/framework/interface.h"

namespace mkube::scheduler::testing {

// One row of a filter plugin's table: a sentence, the pod, the node, what the filter says.
struct FilterCase {
  std::string name;
  api::Pod pod;
  framework::NodeInfo node;
  framework::Code code;
  std::string reason;  // when rejected
};

inline void RunFilterTable(const framework::FilterPlugin& plugin,
                           const std::vector<FilterCase>& cases) {
  for (const auto& c : cases) {
    framework::CycleState state;
    const framework::Status st = plugin.Filter(state, c.pod, c.node);
    EXPECT_EQ(st.code(), c.code) << plugin.Name() << ": " << c.name;
    if (!st.ok()) {
      ASSERT_EQ(st.reasons().size(), 1u) << c.name;
      EXPECT_EQ(st.reasons()[0], c.reason) << c.name;
    }
  }
}

// One row of a filter whose verdict depends on the whole cluster (pod affinity, spreading):
// the pod, every node with its pods, and each node's verdict ("" fits, else the reason).
struct ClusterFilterCase {
  std::string name;
  api::Pod pod;
  std::vector<framework::NodeInfoPtr> nodes;
  std::vector<std::string> want;
};

// PreFilter over the snapshot of the nodes, then Filter on each.
inline void RunClusterFilterTable(const framework::FilterPlugin& plugin,
                                  const std::vector<ClusterFilterCase>& cases) {
  for (const auto& c : cases) {
    framework::Snapshot snapshot(c.nodes);
    framework::CycleState state;
    if (auto* pre = dynamic_cast<const framework::PreFilterPlugin*>(&plugin)) {
      const framework::Status st = pre->PreFilter(state, c.pod, snapshot);
      ASSERT_TRUE(st.ok() || st.skip()) << c.name;
    }
    std::vector<std::string> got;
    for (const auto& node : c.nodes) {
      const framework::Status st = plugin.Filter(state, c.pod, *node);
      got.push_back(st.ok() ? "" : st.reasons().at(0));
    }
    EXPECT_EQ(got, c.want) << plugin.Name() << ": " << c.name;
  }
}

}  // namespace mkube::scheduler::testing
