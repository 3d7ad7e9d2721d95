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

}  // namespace mkube::scheduler::testing
