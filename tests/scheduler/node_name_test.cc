// PodFitsHost: spec.nodeName.
#include "scheduler/plugins/node_name.h"

#include <gtest/gtest.h>

#include "tests/scheduler/filter_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using framework::Code;
using testing::MakeNode;
using testing::MakePod;
using testing::RunFilterTable;

TEST(NodeName, APodNamingANodeFitsOnlyThatNode) {
  RunFilterTable(NodeName(), {
                                 {"no nodeName fits anywhere", MakePod().Obj(),
                                  MakeNode("node01").Info(), Code::kSuccess, ""},
                                 {"the named node", MakePod().NodeName("node01").Obj(),
                                  MakeNode("node01").Info(), Code::kSuccess, ""},
                                 {"another node", MakePod().NodeName("node01").Obj(),
                                  MakeNode("node02").Info(), Code::kUnschedulableAndUnresolvable,
                                  "node(s) didn't match the requested node name"},
                             });
}

}  // namespace
}  // namespace mkube::scheduler::plugins
