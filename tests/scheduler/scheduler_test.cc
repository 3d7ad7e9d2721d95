// The scheduling loop against the fake clientset: bindings, the assumption the next pod sees,
// FailedScheduling and PodScheduled=False, requeue on the event that helps, a failed binding
// retried, and pods that are not this scheduler's.
#include "scheduler/internal/scheduler.h"

#include <gtest/gtest.h>

#include "absl/strings/numbers.h"
#include "api/object.h"
#include "client/testing/fake_client.h"
#include "client/testing/fake_clock.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler {
namespace {

using client::testing::FakeClient;
using testing::MakeNode;
using testing::MakePod;

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto profiles = framework::LoadConfig("", nullptr);
    ASSERT_TRUE(profiles.ok());
    SchedulerOptions o;
    o.clock = &clock_;
    o.seed = 42;
    o.bind_workers = 2;
    scheduler_ = std::make_unique<Scheduler>(&fake_, &events_, std::move(*profiles), o);
    nodes_.AddHandlers(scheduler_->NodeHandlers());
    pods_.AddHandlers(scheduler_->PodHandlers());
    // After the scheduler's handlers: what they have seen (the informers' own versions move
    // before their handlers run).
    // Each informer's own: one may run ahead of the other.
    auto note = [](std::atomic<int64_t>* handled, const google::protobuf::Message& obj) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(api::MetaOf(obj).resource_version(), &v)) return;
      int64_t cur = handled->load();
      while (v > cur && !handled->compare_exchange_weak(cur, v)) {
      }
    };
    std::atomic<int64_t>* nodes = &handled_[1];
    std::atomic<int64_t>* pods = &handled_[0];
    nodes_.AddHandlers({.on_add = [=](const auto& n) { note(nodes, *n); },
                        .on_update = [=](const auto&, const auto& n) { note(nodes, *n); },
                        .on_delete = [=](const auto& n) { note(nodes, *n); }});
    pods_.AddHandlers({.on_add = [=](const auto& p) { note(pods, *p); },
                       .on_update = [=](const auto&, const auto& p) { note(pods, *p); },
                       .on_delete = [=](const auto& p) { note(pods, *p); }});
  }
  void TearDown() override {
    scheduler_->Stop();
    pods_.Stop();
    nodes_.Stop();
  }
  void Start() {
    nodes_.Start();
    pods_.Start();
    ASSERT_TRUE(nodes_.WaitForCacheSync(std::chrono::seconds(5)));
    ASSERT_TRUE(pods_.WaitForCacheSync(std::chrono::seconds(5)));
  }
  void CreateNode(testing::NodeWrapper node) {
    api::Node n =
        node.Allocatable({{"cpu", "1"}, {"memory", "2Gi"}, {"pods", "110"}}).Info().node();
    ASSERT_TRUE(fake_.Create<api::Node>("nodes", "", n).ok());
  }
  void CreatePod(const api::Pod& pod) {
    api::Pod p = pod;
    if (p.metadata().namespace_().empty()) p.mutable_metadata()->set_namespace_("default");
    if (p.spec().containers().empty()) {
      auto* c = p.mutable_spec()->add_containers();
      c->set_name("c");
      c->set_image("busybox");
    }
    auto st = fake_.Create<api::Pod>("pods", p.metadata().namespace_(), p);
    ASSERT_TRUE(st.ok()) << st.status();
  }
  // Waits (real time) until the informers have delivered everything written so far, then
  // schedules every pod that is ready to go and waits for their bindings.
  void Settle() {
    // The newest pod and the newest node written (events are written too, and watched by
    // nobody here); each informer's handlers must have seen its own.
    const char* resources[] = {"pods", "nodes"};
    for (int r = 0; r < 2; ++r) {
      int64_t want = 0;
      apiserver::ListRequest req;
      req.set_resource(resources[r]);
      const auto list = fake_.List(req);
      for (const auto& bytes : list->items()) {
        api::Pod meta_only;  // metadata is field 3 in every kind
        meta_only.ParseFromString(bytes);
        int64_t v = 0;
        if (absl::SimpleAtoi(meta_only.metadata().resource_version(), &v)) want = std::max(want, v);
      }
      for (int i = 0; i < 2000 && handled_[r].load() < want; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    while (scheduler_->queue().ActiveCount() > 0) scheduler_->ScheduleOne();
    scheduler_->WaitForBindings();
    events_.Flush();
  }
  std::string NodeOf(const std::string& pod) {
    auto p = fake_.Get<api::Pod>("pods", "default", pod);
    return p.ok() ? p->spec().node_name() : "<gone>";
  }
  std::vector<std::string> EventsOf(const std::string& reason) {
    apiserver::ListRequest req;
    req.set_resource("events");
    std::vector<std::string> out;
    auto list = fake_.List(req);
    for (const auto& bytes : list->items()) {
      api::Event e;
      e.ParseFromString(bytes);
      if (e.reason() == reason) out.push_back(e.message());
    }
    return out;
  }

  client::testing::FakeClock clock_;
  FakeClient fake_;
  client::EventRecorder events_{&fake_, "default-scheduler", "", 1000};
  client::Informer<api::Node> nodes_{&fake_, "nodes"};
  client::Informer<api::Pod> pods_{&fake_, "pods"};
  std::unique_ptr<Scheduler> scheduler_;
  std::atomic<int64_t> handled_[2] = {0, 0};  // pods, nodes: the newest version handled
};

TEST_F(SchedulerTest, BindsPodsAndTheNextPodSeesTheOneAssumedBeforeIt) {
  CreateNode(MakeNode("node01"));
  CreateNode(MakeNode("node02"));
  Start();
  // Each node has room for one of these; without the assumption both could pick one node.
  CreatePod(MakePod("a").Container({{"cpu", "800m"}}).Obj());
  CreatePod(MakePod("b").Container({{"cpu", "800m"}}).Obj());
  Settle();
  EXPECT_NE(NodeOf("a"), "");
  EXPECT_NE(NodeOf("b"), "");
  EXPECT_NE(NodeOf("a"), NodeOf("b"));
  EXPECT_EQ(fake_.Actions("create", "pods").size(), 4u) << "two pods, two bindings";
  auto pod = fake_.Get<api::Pod>("pods", "default", "a");
  ASSERT_EQ(pod->status().conditions_size(), 1);
  EXPECT_EQ(pod->status().conditions(0).type(), "PodScheduled");
  EXPECT_EQ(pod->status().conditions(0).status(), "True");
  const auto scheduled = EventsOf("Scheduled");
  ASSERT_EQ(scheduled.size(), 2u);
  EXPECT_EQ(scheduled[0].rfind("Successfully assigned default/", 0), 0u) << scheduled[0];
}

TEST_F(SchedulerTest, AnUnschedulablePodSaysWhyAndRunsOnceANodeIsRelabelled) {
  CreateNode(MakeNode("master01").Taint("node-role.kubernetes.io/master", "", "NoSchedule"));
  CreateNode(MakeNode("node01"));
  CreateNode(MakeNode("node02"));
  Start();
  CreatePod(MakePod("sel").NodeSelector("cht", "a").Obj());
  Settle();
  EXPECT_EQ(NodeOf("sel"), "");
  const std::string why =
      "0/3 nodes are available: 1 node(s) had untolerated taint "
      "{node-role.kubernetes.io/master: }, 2 node(s) didn't match Pod's node affinity/selector.";
  EXPECT_EQ(EventsOf("FailedScheduling"), std::vector<std::string>{why});
  auto pod = fake_.Get<api::Pod>("pods", "default", "sel");
  ASSERT_EQ(pod->status().conditions_size(), 1);
  EXPECT_EQ(pod->status().conditions(0).status(), "False");
  EXPECT_EQ(pod->status().conditions(0).reason(), "Unschedulable");
  EXPECT_EQ(pod->status().conditions(0).message(), why);
  EXPECT_EQ(scheduler_->queue().UnschedulableCount(), 1u)
      << "backoff " << scheduler_->queue().BackoffCount() << " active "
      << scheduler_->queue().ActiveCount();
  // More cpu on a node cannot help it (no node lacked cpu): it keeps waiting.
  ASSERT_TRUE(fake_
                  .Patch<api::Node>("nodes", "", "node02",
                                    R"({"status":{"allocatable":{"cpu":"2"}}})", "status")
                  .ok());
  Settle();
  EXPECT_EQ(scheduler_->queue().UnschedulableCount(), 1u) << "not moved by more cpu";
  ASSERT_TRUE(
      fake_.Patch<api::Node>("nodes", "", "node01", R"({"metadata":{"labels":{"cht":"a"}}})").ok());
  Settle();
  if (NodeOf("sel").empty()) {  // still in back-off from its first attempt
    clock_.Advance(absl::Seconds(1));
    Settle();
  }
  EXPECT_EQ(NodeOf("sel"), "node01");
}

TEST_F(SchedulerTest, AFailedBindingIsForgottenAndTriedAgain) {
  CreateNode(MakeNode("node01"));
  Start();
  auto calls = std::make_shared<int>(0);
  fake_.PrependReactor("create", "pods",
                       [calls](const client::testing::Action& a) -> std::optional<absl::Status> {
                         if (a.subresource == "binding" && (*calls)++ == 0)
                           return absl::UnavailableError("apiserver away");
                         return std::nullopt;
                       });
  CreatePod(MakePod("p").Container({{"cpu", "800m"}}).Obj());
  Settle();
  EXPECT_EQ(NodeOf("p"), "");
  EXPECT_FALSE(scheduler_->cache().IsAssumed("default/p")) << "forgotten";
  clock_.Advance(absl::Seconds(1));
  Settle();
  EXPECT_EQ(NodeOf("p"), "node01");
}

TEST_F(SchedulerTest, PodsOfAnotherSchedulerAndPodsWithANodeAreLeftAlone) {
  CreateNode(MakeNode("node01"));
  Start();
  api::Pod other = MakePod("other").Obj();
  other.mutable_spec()->set_scheduler_name("my-scheduler");
  CreatePod(other);
  CreatePod(MakePod("pinned").NodeName("node01").Obj());
  Settle();
  EXPECT_EQ(NodeOf("other"), "");
  for (const auto& a : fake_.Actions("create", "pods")) EXPECT_NE(a.subresource, "binding");
  EXPECT_TRUE(EventsOf("Scheduled").empty()) << "the seeds: no scheduler event for nodeName";
}

}  // namespace
}  // namespace mkube::scheduler
