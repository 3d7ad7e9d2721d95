// Pod affinity and anti-affinity, filter and score, with the seeds' cases.
#include "scheduler/plugins/inter_pod_affinity.h"

#include <gtest/gtest.h>

#include "tests/scheduler/filter_table.h"
#include "tests/scheduler/score_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::RunClusterFilterTable;
using testing::RunScoreTable;

constexpr char kAff[] = "node(s) didn't match pod affinity rules";
constexpr char kAnti[] = "node(s) didn't match pod anti-affinity rules";
constexpr char kExisting[] = "node(s) didn't satisfy existing pods anti-affinity rules";
constexpr char kHost[] = "kubernetes.io/hostname";

testing::NodeWrapper Node(const std::string& name, const std::string& cht = "") {
  auto n = MakeNode(name).Label(kHost, name);
  if (!cht.empty()) n.Label("cht", cht);
  return n;
}

const api::Pod kMyapp01 = MakePod("myapp01").Namespace("default").Label("app", "myapp01").Obj();

// Namespaces by their labels, as the scheduler's namespace informer would have them.
struct FakeHandle : framework::Handle {
  std::map<std::string, std::map<std::string, std::string>> namespaces;
  std::vector<api::LabelSelector> OwnerSelectors(const api::Pod&) const override { return {}; }
  framework::LabelMap NamespaceLabels(const std::string& name) const override {
    framework::LabelMap out;
    if (auto it = namespaces.find(name); it != namespaces.end()) {
      for (const auto& [k, v] : it->second) out[k] = v;
    }
    return out;
  }
  std::vector<std::string> NamespacesMatching(const api::Selector& selector) const override {
    std::vector<std::string> out;
    for (const auto& [name, labels] : namespaces) {
      if (selector.Matches(NamespaceLabels(name))) out.push_back(name);
    }
    return out;
  }
};

TEST(InterPodAffinity, RequiredAffinityNeedsAMatchingPodInTheDomain) {
  const auto pod5 = MakePod("myapp02")
                        .Namespace("default")
                        .Label("app", "myapp02")
                        .PodAffinity(false, 0, "cht", {{"app", "myapp01"}});
  RunClusterFilterTable(
      InterPodAffinity(),
      {
          {"the seeds' pod5: the cht domain of myapp01, both nodes of cht=a",
           pod5.Obj(),
           {Node("node01", "a").Pod(kMyapp01).Ptr(), Node("node02", "a").Ptr(),
            Node("node03", "b").Ptr()},
           {"", "", kAff}},
          {"by hostname: only myapp01's node",
           MakePod().Namespace("default").PodAffinity(false, 0, kHost, {{"app", "myapp01"}}).Obj(),
           {Node("node01").Ptr(), Node("node02").Pod(kMyapp01).Ptr()},
           {kAff, ""}},
          {"a node without the topology key never fits",
           pod5.Obj(),
           {Node("node01").Pod(kMyapp01).Ptr(), Node("node02", "a").Pod(kMyapp01).Ptr()},
           {kAff, ""}},
          {"no matching pod anywhere, the pod not selecting itself: nowhere",
           pod5.Obj(),
           {Node("node01", "a").Ptr(), Node("node02", "b").Ptr()},
           {kAff, kAff}},
          {"no matching pod anywhere, the pod selects itself: the first of its group goes "
           "anywhere with the key",
           MakePod()
               .Namespace("default")
               .Label("app", "myapp01")
               .PodAffinity(false, 0, "cht", {{"app", "myapp01"}})
               .Obj(),
           {Node("node01", "a").Ptr(), Node("node02").Ptr()},
           {"", kAff}},
          {"a pod being deleted still counts, as in Kubernetes",
           pod5.Obj(),
           {Node("node01", "a")
                .Pod(
                    MakePod("old").Namespace("default").Label("app", "myapp01").Terminating().Obj())
                .Ptr()},
           {""}},
          {"two terms: one pod must match both, not one pod each",
           MakePod()
               .Namespace("default")
               .PodAffinity(false, 0, "cht", {{"tier", "web"}})
               .PodAffinity(false, 0, "cht", {{"env", "prod"}})
               .Obj(),
           {Node("node01", "a")
                .Pod(MakePod("w").Namespace("default").Label("tier", "web").Obj())
                .Ptr(),
            Node("node02", "a")
                .Pod(MakePod("p").Namespace("default").Label("env", "prod").Obj())
                .Ptr(),
            Node("node03", "b")
                .Pod(MakePod("both")
                         .Namespace("default")
                         .Label("tier", "web")
                         .Label("env", "prod")
                         .Obj())
                .Ptr()},
           {kAff, kAff, ""}},
          {"a pod in another namespace does not count",
           pod5.Obj(),
           {Node("node01", "a")
                .Pod(MakePod("x").Namespace("other").Label("app", "myapp01").Obj())
                .Ptr()},
           {kAff}},
          {"unless the term names that namespace",
           MakePod()
               .Namespace("default")
               .PodAffinity(false, 0, "cht", {{"app", "myapp01"}}, {"other"})
               .Obj(),
           {Node("node01", "a")
                .Pod(MakePod("x").Namespace("other").Label("app", "myapp01").Obj())
                .Ptr(),
            Node("node02", "b").Ptr()},
           {"", kAff}},
      });
}

TEST(InterPodAffinity, EmptyNamespaceSelectorIsEveryNamespaceAndLabelsAreLookedUp) {
  const api::Pod elsewhere = MakePod("x").Namespace("team-a").Label("app", "db").Obj();
  const std::vector<framework::NodeInfoPtr> nodes = {Node("node01").Pod(elsewhere).Ptr(),
                                                     Node("node02").Ptr()};
  api::LabelSelector all;
  RunClusterFilterTable(InterPodAffinity(),
                        {{"namespaceSelector {}",
                          MakePod()
                              .Namespace("default")
                              .PodAffinity(false, 0, kHost, {{"app", "db"}}, {}, &all)
                              .Obj(),
                          nodes,
                          {"", kAff}}});
  FakeHandle handle;
  handle.namespaces = {{"team-a", {{"team", "a"}}}, {"team-b", {{"team", "b"}}}};
  api::LabelSelector team_a, team_b;
  (*team_a.mutable_match_labels())["team"] = "a";
  (*team_b.mutable_match_labels())["team"] = "b";
  const InterPodAffinity plugin({}, &handle);
  RunClusterFilterTable(plugin, {{"namespaceSelector team=a",
                                  MakePod()
                                      .Namespace("default")
                                      .PodAffinity(false, 0, kHost, {{"app", "db"}}, {}, &team_a)
                                      .Obj(),
                                  nodes,
                                  {"", kAff}},
                                 {"namespaceSelector team=b",
                                  MakePod()
                                      .Namespace("default")
                                      .PodAffinity(false, 0, kHost, {{"app", "db"}}, {}, &team_b)
                                      .Obj(),
                                  nodes,
                                  {kAff, kAff}}});
}

TEST(InterPodAffinity, RequiredAntiAffinityKeepsPodsApart) {
  const auto pod7 = MakePod("myapp20")
                        .Namespace("default")
                        .Label("app", "myapp20")
                        .PodAffinity(true, 0, "cht", {{"app", "myapp01"}});
  RunClusterFilterTable(
      InterPodAffinity(),
      {
          {"the seeds' pod7: both nodes share cht=a with myapp01: Pending",
           pod7.Obj(),
           {Node("node01", "a").Pod(kMyapp01).Ptr(), Node("node02", "a").Ptr()},
           {kAnti, kAnti}},
          {"node02 relabelled cht=b: it runs there",
           pod7.Obj(),
           {Node("node01", "a").Pod(kMyapp01).Ptr(), Node("node02", "b").Ptr()},
           {kAnti, ""}},
          {"a node without the key is not in myapp01's domain",
           pod7.Obj(),
           {Node("node01", "a").Pod(kMyapp01).Ptr(), Node("node02").Ptr()},
           {kAnti, ""}},
          {"by hostname: one per node",
           MakePod()
               .Namespace("default")
               .Label("app", "web")
               .PodAffinity(true, 0, kHost, {{"app", "web"}})
               .Obj(),
           {Node("node01").Pod(MakePod("w1").Namespace("default").Label("app", "web").Obj()).Ptr(),
            Node("node02").Ptr()},
           {kAnti, ""}},
      });
}

TEST(InterPodAffinity, ExistingPodsAntiAffinityIsHonoured) {
  const api::Pod loner = MakePod("loner")
                             .Namespace("default")
                             .Label("app", "loner")
                             .PodAffinity(true, 0, "cht", {{"app", "web"}})
                             .Obj();
  RunClusterFilterTable(InterPodAffinity(),
                        {
                            {"a placed pod refuses web pods in its cht domain",
                             MakePod().Namespace("default").Label("app", "web").Obj(),
                             {Node("node01", "a").Pod(loner).Ptr(), Node("node02", "a").Ptr(),
                              Node("node03", "b").Ptr()},
                             {kExisting, kExisting, ""}},
                            {"other pods are welcome",
                             MakePod().Namespace("default").Label("app", "db").Obj(),
                             {Node("node01", "a").Pod(loner).Ptr(), Node("node02", "b").Ptr()},
                             {"", ""}},
                        });
}

TEST(InterPodAffinity, PreferredTermsRank) {
  const auto pod6 = MakePod("myapp10")
                        .Namespace("default")
                        .Label("app", "myapp10")
                        .PodAffinity(true, 100, kHost, {{"app", "myapp01"}});
  const api::Pod a = MakePod("a").Namespace("default").Label("app", "a").Obj();
  const api::Pod b = MakePod("b").Namespace("default").Label("app", "b").Obj();
  RunScoreTable(
      InterPodAffinity(),
      {
          {"the seeds' pod6: soft anti-affinity avoids myapp01's node",
           pod6.Obj(),
           {Node("node01").Pod(kMyapp01).Ptr(), Node("node02").Ptr()},
           {0, 100}},
          {"soft affinity by cht: both nodes of myapp01's domain",
           MakePod().Namespace("default").PodAffinity(false, 10, "cht", {{"app", "myapp01"}}).Obj(),
           {Node("node01", "a").Pod(kMyapp01).Ptr(), Node("node02", "a").Ptr(),
            Node("node03", "b").Ptr()},
           {100, 100, 0}},
          {"affinity 80 to a, anti-affinity 20 to b: scaled between the worst and the best",
           MakePod()
               .Namespace("default")
               .PodAffinity(false, 80, kHost, {{"app", "a"}})
               .PodAffinity(true, 20, kHost, {{"app", "b"}})
               .Obj(),
           {Node("node01").Pod(a).Ptr(), Node("node02").Pod(b).Ptr(), Node("node03").Ptr()},
           {100, 0, 20}},
          {"a placed pod's required affinity to this pod counts 1",
           MakePod().Namespace("default").Label("app", "web").Obj(),
           {Node("node01")
                .Pod(MakePod("x")
                         .Namespace("default")
                         .PodAffinity(false, 0, kHost, {{"app", "web"}})
                         .Obj())
                .Ptr(),
            Node("node02").Ptr()},
           {100, 0}},
          {"a placed pod's preferred anti-affinity to this pod",
           MakePod().Namespace("default").Label("app", "web").Obj(),
           {Node("node01")
                .Pod(MakePod("x")
                         .Namespace("default")
                         .PodAffinity(true, 50, kHost, {{"app", "web"}})
                         .Obj())
                .Ptr(),
            Node("node02").Ptr()},
           {0, 100}},
          {"no terms anywhere: skipped",
           MakePod().Namespace("default").Obj(),
           {Node("node01").Pod(kMyapp01).Ptr()},
           {}},
      });
  const InterPodAffinity ignoring(
      {.hard_pod_affinity_weight = 0, .ignore_preferred_terms_of_existing_pods = true}, nullptr);
  RunScoreTable(ignoring, {{"hardPodAffinityWeight 0 and ignorePreferredTermsOfExistingPods",
                            MakePod().Namespace("default").Label("app", "web").Obj(),
                            {Node("node01")
                                 .Pod(MakePod("x")
                                          .Namespace("default")
                                          .PodAffinity(false, 0, kHost, {{"app", "web"}})
                                          .PodAffinity(false, 50, kHost, {{"app", "web"}})
                                          .Obj())
                                 .Ptr(),
                             Node("node02").Ptr()},
                            {}}});
}

}  // namespace
}  // namespace mkube::scheduler::plugins
