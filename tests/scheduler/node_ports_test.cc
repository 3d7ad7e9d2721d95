// PodFitsHostPorts: two pods asking for one hostPort never share a node.
#include "scheduler/plugins/node_ports.h"

#include <gtest/gtest.h>

#include "tests/scheduler/filter_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using framework::Code;
using testing::MakeNode;
using testing::MakePod;
using testing::RunFilterTable;

constexpr char kTaken[] = "node(s) didn't have free ports for the requested pod ports";

TEST(NodePorts, APodWithoutHostPortsSkipsTheFilter) {
  framework::CycleState state;
  EXPECT_TRUE(NodePorts().PreFilter(state, MakePod().Container({}).Obj(), {}).skip());
  EXPECT_TRUE(NodePorts().PreFilter(state, MakePod().HostPort(80).Obj(), {}).ok());
}

TEST(NodePorts, AHostPortIsTakenPerProtocolAndAddress) {
  const auto on = [](const api::Pod& pod) { return MakeNode("n").Pod(pod).Info(); };
  RunFilterTable(
      NodePorts(),
      {
          {"no host ports", MakePod().Container({}).Obj(), on(MakePod("o").HostPort(80).Obj()),
           Code::kSuccess, ""},
          {"a free port", MakePod().HostPort(8080).Obj(), on(MakePod("o").HostPort(80).Obj()),
           Code::kSuccess, ""},
          {"the same port", MakePod().HostPort(80).Obj(), on(MakePod("o").HostPort(80).Obj()),
           Code::kUnschedulable, kTaken},
          {"TCP is the default protocol", MakePod().HostPort(80, "TCP").Obj(),
           on(MakePod("o").HostPort(80).Obj()), Code::kUnschedulable, kTaken},
          {"another protocol", MakePod().HostPort(53, "UDP").Obj(),
           on(MakePod("o").HostPort(53, "TCP").Obj()), Code::kSuccess, ""},
          {"two addresses", MakePod().HostPort(80, "", "127.1.2.1").Obj(),
           on(MakePod("o").HostPort(80, "", "127.1.2.2").Obj()), Code::kSuccess, ""},
          {"an address and the wildcard", MakePod().HostPort(80, "", "127.1.2.1").Obj(),
           on(MakePod("o").HostPort(80).Obj()), Code::kUnschedulable, kTaken},
          {"the wildcard and an address", MakePod().HostPort(80).Obj(),
           on(MakePod("o").HostPort(80, "", "127.1.2.2").Obj()), Code::kUnschedulable, kTaken},
          {"a pod that ended holds no port", MakePod().HostPort(80).Obj(),
           on(MakePod("o").HostPort(80).Phase("Failed").Obj()), Code::kSuccess, ""},
      });
}

}  // namespace
}  // namespace mkube::scheduler::plugins
