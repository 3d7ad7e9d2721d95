// The informer against the fake clientset: list then watch, resume after a broken stream
// without relisting, relist only when the version is too old, retry failed lists.
#include "client/informer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "client/testing/fake_client.h"
#include "client/testing/fake_clock.h"
#include "proto/api/core.pb.h"
#include "tests/util/eventually.h"

namespace mkube::client {
namespace {

using mkube::testing::Eventually;

api::Pod MakePod(const std::string& name, const std::string& node = "") {
  api::Pod pod;
  pod.mutable_metadata()->set_name(name);
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image("busybox");
  pod.mutable_spec()->set_node_name(node);
  return pod;
}

// What the handlers saw, in order.
class Seen {
 public:
  Informer<api::Pod>::Handlers Handlers() {
    return {[this](const auto& p) { Add("add " + p->metadata().name()); },
            [this](const auto&, const auto& p) { Add("update " + p->metadata().name()); },
            [this](const auto& p) { Add("delete " + p->metadata().name()); }};
  }
  std::vector<std::string> Get() const {
    absl::MutexLock lock(&mu_);
    return seen_;
  }
  bool WaitFor(size_t n) const {
    return Eventually([&] { return Get().size() >= n; });
  }

 private:
  void Add(std::string s) {
    absl::MutexLock lock(&mu_);
    seen_.push_back(std::move(s));
  }
  mutable absl::Mutex mu_;
  std::vector<std::string> seen_ ABSL_GUARDED_BY(mu_);
};

api::Pod Delete(testing::FakeClient& fake, const std::string& name) {
  apiserver::DeleteRequest del;
  del.set_resource("pods");
  del.set_namespace_("default");
  del.set_name(name);
  del.set_grace_period_seconds(0);
  api::Pod pod;
  pod.ParseFromString(*fake.Delete(del));
  return pod;
}

TEST(Informer, ListsThenWatchesAndUpdatesTheCacheBeforeHandlers) {
  testing::FakeClient fake;
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("a")).ok());
  Informer<api::Pod> pods(&fake, "pods");
  Seen seen;
  pods.AddHandlers(seen.Handlers());
  // A handler that finds the cache already changed.
  bool cache_first = true;
  pods.AddHandlers({[&](const auto& p) { cache_first &= pods.Get(KeyOf(*p)) != nullptr; },
                    nullptr,
                    [&](const auto& p) { cache_first &= pods.Get(KeyOf(*p)) == nullptr; }});
  pods.Start();
  ASSERT_TRUE(pods.WaitForCacheSync(std::chrono::seconds(10)));
  ASSERT_TRUE(fake.WaitForWatches(1));
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("b")).ok());
  ASSERT_TRUE(fake.Patch<api::Pod>("pods", "default", "a", R"({"metadata":{"labels":{"x":"y"}}})").ok());
  Delete(fake, "b");
  ASSERT_TRUE(seen.WaitFor(4));
  EXPECT_EQ(seen.Get(), (std::vector<std::string>{"add a", "add b", "update a", "delete b"}));
  EXPECT_TRUE(cache_first);
  EXPECT_EQ(pods.List().size(), 1u);
  EXPECT_EQ(pods.Get("default/a")->metadata().labels().at("x"), "y");
  EXPECT_EQ(pods.LastSyncResourceVersion(), std::to_string(fake.resource_version()));
  EXPECT_EQ(pods.lists(), 1);
}

TEST(Informer, ABrokenWatchResumesFromTheLastVersionWithoutRelisting) {
  testing::FakeClient fake;
  testing::FakeClock clock;
  Informer<api::Pod> pods(&fake, "pods", {.clock = &clock});
  Seen seen;
  pods.AddHandlers(seen.Handlers());
  pods.Start();
  ASSERT_TRUE(fake.WaitForWatches(1));
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("a")).ok());
  ASSERT_TRUE(seen.WaitFor(1));
  fake.EndWatches(absl::UnavailableError("connection reset"));
  // Changes made while it is away arrive once it watches again, each once.
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("b")).ok());
  ASSERT_TRUE(clock.WaitForWaiters(1)) << "backing off";
  clock.Advance(absl::Seconds(4));
  ASSERT_TRUE(fake.WaitForWatches(1));
  ASSERT_TRUE(seen.WaitFor(2));
  EXPECT_EQ(seen.Get(), (std::vector<std::string>{"add a", "add b"}));
  EXPECT_EQ(pods.lists(), 1);
  const auto watches = fake.Actions("watch", "pods");
  ASSERT_EQ(watches.size(), 2u);
}

TEST(Informer, ATooOldVersionMakesItRelistAndReconcile) {
  testing::FakeClient fake;
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("a")).ok());
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("b")).ok());
  testing::FakeClock clock;
  Informer<api::Pod> pods(&fake, "pods", {.clock = &clock});
  Seen seen;
  pods.AddHandlers(seen.Handlers());
  pods.Start();
  ASSERT_TRUE(fake.WaitForWatches(1));
  ASSERT_TRUE(seen.WaitFor(2));
  // While it cannot watch: a changes, b goes, c comes, and the history is compacted.
  fake.FailNext("watch", "pods", absl::UnavailableError("down"));
  fake.EndWatches(absl::UnavailableError("connection reset"));
  ASSERT_TRUE(fake.Patch<api::Pod>("pods", "default", "a", R"({"metadata":{"labels":{"x":"y"}}})").ok());
  Delete(fake, "b");
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("c")).ok());
  fake.Compact();
  // The failed watch and the one refused as too old: then a list, whose differences with the
  // cache reach the handlers as changes.
  ASSERT_TRUE(Eventually([&] {
    if (clock.waiters() > 0) clock.Advance(absl::Seconds(4));  // each back-off passes
    return pods.lists() == 2 && fake.open_watches() == 1;
  }));
  ASSERT_TRUE(seen.WaitFor(5));
  auto got = seen.Get();
  std::vector<std::string> tail(got.begin() + 2, got.end());
  std::sort(tail.begin(), tail.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"add c", "delete b", "update a"}));
  EXPECT_EQ(pods.lists(), 2);
  EXPECT_EQ(pods.List().size(), 2u);
}

TEST(Informer, AFailedListIsRetriedAfterABackOff) {
  testing::FakeClient fake;
  testing::FakeClock clock;
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("a", "node01")).ok());
  ASSERT_TRUE(fake.Create("pods", "default", MakePod("b", "node02")).ok());
  fake.FailNext("list", "pods", absl::UnavailableError("down"));
  Informer<api::Pod> pods(&fake, "pods", {.field_selector = "spec.nodeName=node01", .clock = &clock});
  pods.Start();
  ASSERT_TRUE(clock.WaitForWaiters(1));
  EXPECT_FALSE(pods.HasSynced());
  clock.Advance(absl::Seconds(4));
  ASSERT_TRUE(pods.WaitForCacheSync(std::chrono::seconds(10)));
  ASSERT_EQ(pods.List().size(), 1u);
  EXPECT_EQ(pods.List()[0]->metadata().name(), "a");
}

TEST(Informer, IndexesFollowAddsUpdatesDeletesAndRelists) {
  testing::FakeClient fake;
  ASSERT_TRUE(fake.Create<api::Pod>("pods", "default", MakePod("a", "node01")).ok());
  Informer<api::Pod> informer(&fake, "pods");
  informer.AddIndex("node", [](const api::Pod& p) {
    return p.spec().node_name().empty() ? std::vector<std::string>{}
                                        : std::vector<std::string>{p.spec().node_name()};
  });
  informer.Start();
  ASSERT_TRUE(informer.WaitForCacheSync(std::chrono::seconds(5)));
  auto names = [&](const std::string& node) {
    std::vector<std::string> out;
    for (const auto& p : informer.ByIndex("node", node)) out.push_back(p->metadata().name());
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(names("node01"), std::vector<std::string>{"a"});
  ASSERT_TRUE(fake.Create<api::Pod>("pods", "default", MakePod("b")).ok());
  ASSERT_TRUE(Eventually([&] { return informer.List().size() == 2; }));
  EXPECT_TRUE(names("").empty()) << "an unbound pod is filed nowhere";
  api::Binding bind;
  bind.mutable_metadata()->set_name("b");
  bind.mutable_target()->set_name("node02");
  apiserver::CreateRequest req;
  req.set_resource("pods");
  req.set_namespace_("default");
  req.set_name("b");
  req.set_subresource("binding");
  req.set_object(bind.SerializeAsString());
  ASSERT_TRUE(fake.CreateRaw(req).ok());
  ASSERT_TRUE(Eventually([&] { return names("node02") == std::vector<std::string>{"b"}; }));
  Delete(fake, "a");
  ASSERT_TRUE(Eventually([&] { return names("node01").empty(); }));
  // A relist rebuilds the indexes from what the server has.
  ASSERT_TRUE(fake.Create<api::Pod>("pods", "default", MakePod("c", "node02")).ok());
  fake.Compact();
  fake.EndWatches(absl::OutOfRangeError("too old"));
  ASSERT_TRUE(Eventually([&] { return names("node02") == std::vector<std::string>{"b", "c"}; }));
  EXPECT_TRUE(informer.ByIndex("no-such-index", "node02").empty());
  informer.Stop();
}

}  // namespace
}  // namespace mkube::client
