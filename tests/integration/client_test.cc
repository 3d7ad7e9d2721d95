// The client library against the real apiserver and store: the informer lists, watches,
// keeps its cache, runs handlers, and survives an apiserver restart.
#include <gtest/gtest.h>

#include <thread>

#include "client/client.h"
#include "client/informer.h"
#include "proto/api/core.pb.h"
#include "tests/util/apiserver_process.h"
#include "tests/util/store_process.h"

namespace mkube::testing {
namespace {

api::Pod NewPod(const std::string& name) {
  api::Pod p;
  p.mutable_metadata()->set_name(name);
  auto* c = p.mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image("busybox");
  return p;
}

client::ClientOptions AdminOptions(const std::string& address) {
  client::ClientOptions o;
  o.address = address;
  o.token = "admin-token";
  return o;
}

template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

TEST(Informer, ListsWatchesRunsHandlersAndResumesAfterAnApiserverRestart) {
  TempDir dir;
  StoreProcess store(dir.Sub("store"), dir.Sub("store.log"));
  ASSERT_TRUE(store.Start().ok());
  auto api = std::make_unique<ApiServerProcess>(dir.path(), store.address());
  ASSERT_TRUE(api->Start().ok());
  client::ApiClient admin(AdminOptions(api->address()));
  ASSERT_TRUE(admin.Create("pods", "default", NewPod("before")).ok());

  std::mutex mu;
  std::vector<std::string> seen;
  client::Informer<api::Pod> pods(&admin, "pods");
  pods.AddHandlers({
      [&](const auto& p) { std::lock_guard<std::mutex> l(mu); seen.push_back("add " + p->metadata().name()); },
      [&](const auto&, const auto& p) { std::lock_guard<std::mutex> l(mu); seen.push_back("update " + p->metadata().name()); },
      [&](const auto& p) { std::lock_guard<std::mutex> l(mu); seen.push_back("delete " + p->metadata().name()); },
  });
  pods.Start();
  ASSERT_TRUE(pods.WaitForCacheSync(std::chrono::seconds(10)));
  EXPECT_NE(pods.Get("default/before"), nullptr);

  ASSERT_TRUE(admin.Create("pods", "default", NewPod("live")).ok());
  ASSERT_TRUE(admin.Patch<api::Pod>("pods", "default", "live", R"({"metadata":{"labels":{"a":"b"}}})").ok());
  apiserver::DeleteRequest del;
  del.set_resource("pods");
  del.set_namespace_("default");
  del.set_name("before");
  ASSERT_TRUE(admin.Delete(del).ok());
  ASSERT_TRUE(Eventually([&] { return pods.Get("default/before") == nullptr; }));
  ASSERT_NE(pods.Get("default/live"), nullptr);
  EXPECT_EQ(pods.Get("default/live")->metadata().labels().at("a"), "b");
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_EQ(seen, (std::vector<std::string>{"add before", "add live", "update live",
                                              "delete before"}));
  }

  // The apiserver goes away and comes back on another port: a new client, same informer
  // logic, resumes; nothing is missed.
  api->Kill9();
  api = std::make_unique<ApiServerProcess>(dir.path(), store.address());
  ASSERT_TRUE(api->Start().ok());
  client::ApiClient admin2(AdminOptions(api->address()));
  client::Informer<api::Pod> again(&admin2, "pods", "default");
  again.Start();
  ASSERT_TRUE(again.WaitForCacheSync(std::chrono::seconds(10)));
  ASSERT_TRUE(admin2.Create("pods", "default", NewPod("after")).ok());
  ASSERT_TRUE(Eventually([&] { return again.Get("default/after") != nullptr; }));
  EXPECT_EQ(again.List().size(), 2u);
  EXPECT_EQ(again.lists(), 1);
  pods.Stop();
  again.Stop();
}

}  // namespace
}  // namespace mkube::testing
