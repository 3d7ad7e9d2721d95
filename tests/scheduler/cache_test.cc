// The scheduler's cache: assumed pods, their confirmation and forgetting, and snapshots that
// copy only what changed.
#include "scheduler/internal/cache.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler {
namespace {

using testing::MakeNode;
using testing::MakePod;

framework::NodePtr Node(const std::string& name) {
  return std::make_shared<api::Node>(
      MakeNode(name).Allocatable({{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}).Info().node());
}

framework::PodPtr PodOn(const std::string& name, const std::string& node,
                        const std::string& cpu = "1") {
  return MakePod(name).Namespace("default").NodeName(node).Container({{"cpu", cpu}}).Ptr();
}

int64_t Cpu(const framework::Snapshot& s, const std::string& node) {
  auto it = s.Get(node)->requested().find("cpu");
  return it == s.Get(node)->requested().end() ? 0 : it->second;
}

TEST(Cache, AnAssumedPodIsOnItsNodeUntilConfirmedOrForgotten) {
  Cache cache;
  cache.AddNode(Node("node01"));
  framework::Snapshot snap;
  ASSERT_TRUE(cache.AssumePod(PodOn("a", "node01")).ok());
  EXPECT_TRUE(cache.IsAssumed("default/a"));
  EXPECT_FALSE(cache.AssumePod(PodOn("a", "node01")).ok()) << "once";
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(Cpu(snap, "node01"), 1000) << "the next pod sees it";

  cache.AddPod(PodOn("a", "node01"));  // the informer shows it bound
  EXPECT_FALSE(cache.IsAssumed("default/a"));
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(Cpu(snap, "node01"), 1000) << "counted once";
  cache.ForgetPod("default/a");
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(Cpu(snap, "node01"), 1000) << "a confirmed pod is not forgotten";

  ASSERT_TRUE(cache.AssumePod(PodOn("b", "node01", "2")).ok());
  cache.ForgetPod("default/b");  // its binding failed
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(Cpu(snap, "node01"), 1000);
  cache.RemovePod(*PodOn("a", "node01"));
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(Cpu(snap, "node01"), 0);
  EXPECT_EQ(cache.PodCount(), 0u);
}

TEST(Cache, SnapshotsCopyOnlyTheNodesThatChanged) {
  Cache cache;
  cache.AddNode(Node("node01"));
  cache.AddNode(Node("node02"));
  framework::Snapshot snap;
  cache.UpdateSnapshot(&snap);
  ASSERT_EQ(snap.nodes().size(), 2u);
  const framework::NodeInfo* n1 = snap.Get("node01");
  const framework::NodeInfo* n2 = snap.Get("node02");
  cache.AddPod(PodOn("a", "node02"));
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(snap.Get("node01"), n1) << "unchanged: the same copy";
  EXPECT_NE(snap.Get("node02"), n2);
  EXPECT_EQ(snap.Get("node02")->pods().size(), 1u);
  cache.AddNode(Node("node03"));
  cache.RemoveNode("node01");
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(snap.nodes().size(), 2u);
  EXPECT_EQ(snap.Get("node01"), nullptr);
  EXPECT_NE(snap.Get("node03"), nullptr);
}

TEST(Cache, SnapshotsKnowWhichNodesHavePodsWithAffinityAndTheirDistinctTerms) {
  Cache cache;
  for (const char* n : {"node01", "node02", "node03"}) cache.AddNode(Node(n));
  framework::Snapshot snap;
  cache.UpdateSnapshot(&snap);
  auto names = [](const std::vector<framework::NodeInfoPtr>& nodes) {
    std::set<std::string> out;
    for (const auto& n : nodes) out.insert(n->name());
    return out;
  };
  auto apart = [](const std::string& name, const std::string& node) {
    return MakePod(name)
        .Namespace("default")
        .NodeName(node)
        .Label("app", "web")
        .PodAffinity(true, 0, "kubernetes.io/hostname", {{"app", "web"}})
        .Ptr();
  };
  cache.AddPod(apart("a", "node01"));
  cache.AddPod(apart("b", "node02"));
  cache.AddPod(apart("c", "node02"));
  cache.AddPod(PodOn("plain", "node03"));
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(names(snap.have_pods_with_required_anti_affinity()),
            (std::set<std::string>{"node01", "node02"}));
  ASSERT_EQ(snap.Get("node02")->affinity_terms().size(), 1u) << "one distinct term";
  EXPECT_EQ(snap.Get("node02")->affinity_terms()[0].count, 2);
  cache.RemovePod(*apart("a", "node01"));
  cache.RemovePod(*apart("b", "node02"));
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(names(snap.have_pods_with_affinity()), (std::set<std::string>{"node02"}));
  EXPECT_EQ(snap.Get("node02")->affinity_terms()[0].count, 1);
  EXPECT_TRUE(snap.Get("node01")->affinity_terms().empty());
}

// The snapshot's sums of label groups by zone, kept in step as nodes change one at a time,
// always equal to adding the nodes up again.
TEST(Cache, SnapshotsSumLabelGroupsByDomainAsNodesChange) {
  constexpr char kZone[] = "topology.kubernetes.io/zone";
  auto zoned = [&](const std::string& name, const std::string& zone) {
    auto n = MakeNode(name).Allocatable({{"cpu", "4"}, {"pods", "110"}});
    if (!zone.empty()) n.Label(kZone, zone);
    return std::make_shared<api::Node>(n.Info().node());
  };
  auto pod = [](const std::string& name, const std::string& node, const std::string& app) {
    return MakePod(name).Namespace("default").NodeName(node).Label("app", app);
  };
  Cache cache;
  cache.AddNode(zoned("node01", "a"));
  cache.AddNode(zoned("node02", "a"));
  cache.AddNode(zoned("node03", "b"));
  cache.AddNode(zoned("node04", ""));
  for (auto [name, node, app] : {std::tuple{"w1", "node01", "web"}, {"w2", "node01", "web"},
                                 {"d1", "node02", "db"}, {"w3", "node03", "web"},
                                 {"w4", "node04", "web"}}) {
    cache.AddPod(pod(name, node, app).Ptr());
  }
  framework::Snapshot snap;
  cache.UpdateSnapshot(&snap);
  // "value: app=count ..." for every domain, nodes without the key as "-".
  auto summary = [](const framework::Domains& d) {
    std::map<std::string, std::map<std::string, int64_t>> by;
    auto add = [&](const std::string& value, const framework::Domain& domain) {
      auto& apps = by[value + "(" + std::to_string(domain.nodes) + ")"];
      for (const auto& [id, g] : domain.groups) apps[g.sample->metadata().labels().at("app")] += g.live;
    };
    for (const auto& [value, domain] : d.by_value) add(value, domain);
    if (d.missing.nodes > 0) add("-", d.missing);
    std::string out;
    for (const auto& [value, apps] : by) {
      out += value + ":";
      for (const auto& [app, n] : apps) out += " " + app + "=" + std::to_string(n);
      out += "; ";
    }
    return out;
  };
  auto fresh = [&] {
    framework::Snapshot again(snap.nodes());
    return summary(again.DomainsOf(kZone));
  };
  EXPECT_EQ(summary(snap.DomainsOf(kZone)), "-(1): web=1; a(2): db=1 web=2; b(1): web=1; ");

  cache.AddPod(pod("w5", "node02", "web").Ptr());
  cache.AddPod(pod("w1", "node01", "web").Terminating().Ptr());  // being deleted: not counted
  cache.RemovePod(*pod("w2", "node01", "web").Ptr());
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(summary(snap.DomainsOf(kZone)), "-(1): web=1; a(2): db=1 web=1; b(1): web=1; ");
  EXPECT_EQ(summary(snap.DomainsOf(kZone)), fresh());

  cache.UpdateNode(zoned("node03", "c"));  // relabelled: zone b has no node left
  cache.RemovePod(*pod("d1", "node02", "db").Ptr());
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(summary(snap.DomainsOf(kZone)), "-(1): web=1; a(2): web=1; c(1): web=1; ");
  EXPECT_EQ(summary(snap.DomainsOf(kZone)), fresh());
}

TEST(Cache, PodsOfANodeNotYetKnownJoinItWhenItComes) {
  Cache cache;
  cache.AddPod(PodOn("early", "node09"));
  cache.AddNode(Node("node09"));
  framework::Snapshot snap;
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(snap.Get("node09")->pods().size(), 1u);
  cache.RemoveNode("node09");
  cache.AddNode(Node("node09"));
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(snap.Get("node09")->pods().size(), 1u) << "a node that comes back has its pods";
}

TEST(Cache, AnEndedPodHoldsNothing) {
  Cache cache;
  cache.AddNode(Node("node01"));
  cache.AddPod(PodOn("job", "node01"));
  auto done = std::make_shared<api::Pod>(*PodOn("job", "node01"));
  done->mutable_status()->set_phase("Succeeded");
  cache.UpdatePod(done);
  framework::Snapshot snap;
  cache.UpdateSnapshot(&snap);
  EXPECT_EQ(Cpu(snap, "node01"), 0);
  EXPECT_TRUE(snap.Get("node01")->pods().empty());
}

}  // namespace
}  // namespace mkube::scheduler
