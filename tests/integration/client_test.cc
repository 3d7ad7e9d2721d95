// The client library against the real apiserver and store: the informer lists, watches,
// keeps its cache, runs handlers, and survives an apiserver restart.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <mutex>

#include "client/client.h"
#include "client/credentials.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/leader_election.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"
#include "tests/util/cluster.h"
#include "tests/util/eventually.h"

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

TEST(Informer, ListsWatchesRunsHandlersAndResumesAfterAnApiserverRestart) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Start(Cluster::ApiserverOnly()).ok());
  client::GrpcClient admin(cluster.ClientOptionsFor("admin-token"));
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
  ASSERT_TRUE(cluster.RestartApiserver().ok());
  client::GrpcClient admin2(cluster.ClientOptionsFor("admin-token"));
  client::Informer<api::Pod> again(&admin2, "pods", {.ns = "default"});
  again.Start();
  ASSERT_TRUE(again.WaitForCacheSync(std::chrono::seconds(10)));
  ASSERT_TRUE(admin2.Create("pods", "default", NewPod("after")).ok());
  ASSERT_TRUE(Eventually([&] { return again.Get("default/after") != nullptr; }));
  EXPECT_EQ(again.List().size(), 2u);
  EXPECT_EQ(again.lists(), 1);
  pods.Stop();
  again.Stop();
}

// A daemon's client, used all along while the apiserver is killed and started again on its
// port, works again as soon as the apiserver serves: its calls wait for the connection, and so
// keep it being made (a client whose calls all fail at once is reconnected seconds late).
TEST(Reconnect, ADaemonsClientWorksAgainAsSoonAsTheApiserverServes) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Start(Cluster::ApiserverOnly()).ok());
  const std::string token_file = cluster.dir().Sub("admin.token");
  std::ofstream(token_file) << "admin-token\n";
  auto options = client::DaemonClientOptions(cluster.apiserver().address(), token_file, "", true);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->wait_for_ready);
  options->timeout = std::chrono::milliseconds(500);
  client::GrpcClient c(*options);
  auto get = [&] { return c.Get<api::Namespace>("namespaces", "", "default").status(); };
  ASSERT_TRUE(get().ok());
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    cluster.apiserver().Kill9();
    // Called while the apiserver is away, as a daemon's informers and workers do.
    EXPECT_TRUE(Consistently([&] { return !get().ok(); }, std::chrono::seconds(2)));
    ASSERT_TRUE(cluster.RestartApiserver(options->address).ok());
    const auto serving = std::chrono::steady_clock::now();
    absl::Status st;
    Eventually([&] { return (st = get()).ok(); }, std::chrono::seconds(30));
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - serving).count();
    std::cout << "round " << round << ": works again " << took << " s after the apiserver serves\n";
    ASSERT_TRUE(st.ok()) << st;
    // 0.35-0.66 s measured; a fail-fast client took 6.6-7.4 s every round. Room for load.
    EXPECT_LT(took, 4.0);
  }
}

TEST(EventRecorder, PostsEventsAndCountsRepeatsOfOne) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Start(Cluster::ApiserverOnly()).ok());
  client::ApiClient& admin = *cluster.client();
  auto pod = admin.Create("pods", "default", NewPod("p"));
  ASSERT_TRUE(pod.ok());
  {
    client::EventRecorder recorder(&admin, "kubelet", "node01");
    for (int i = 0; i < 3; ++i) recorder.Record(*pod, "Warning", "BackOff", "Back-off restarting");
    recorder.Record(*pod, "Normal", "Started", "Started container c");
    recorder.Flush();
    EXPECT_EQ(recorder.dropped(), 0u);
  }
  apiserver::ListRequest req;
  req.set_resource("events");
  req.set_namespace_("default");
  auto list = admin.List(req);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->items_size(), 2);
  std::map<std::string, api::Event> by_reason;
  for (const auto& bytes : list->items()) {
    api::Event e;
    ASSERT_TRUE(e.ParseFromString(bytes));
    by_reason[e.reason()] = e;
  }
  const api::Event& backoff = by_reason["BackOff"];
  EXPECT_EQ(backoff.count(), 3);
  EXPECT_EQ(backoff.type(), "Warning");
  EXPECT_EQ(backoff.involved_object().kind(), "Pod");
  EXPECT_EQ(backoff.involved_object().name(), "p");
  EXPECT_EQ(backoff.involved_object().uid(), pod->metadata().uid());
  EXPECT_EQ(backoff.source().component(), "kubelet");
  EXPECT_EQ(backoff.source().host(), "node01");
  EXPECT_EQ(backoff.metadata().name().rfind("p.", 0), 0u);
  EXPECT_EQ(by_reason["Started"].count(), 1);
}

TEST(LeaderElection, OneLeaderAtATimeAndAHandOverWhenItStops) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Start(Cluster::ApiserverOnly()).ok());
  client::GrpcClient ca(cluster.ClientOptionsFor("admin-token")),
      cb(cluster.ClientOptionsFor("admin-token"));
  auto config = [](const std::string& id) {
    client::LeaderElector::Config c;
    c.lease_name = "mkube-scheduler";
    c.identity = id;
    // Long enough that a starved renewer on a loaded machine does not lose its lease.
    c.lease_duration = absl::Milliseconds(4000);
    c.renew_deadline = absl::Milliseconds(3000);
    c.retry_period = absl::Milliseconds(100);
    return c;
  };
  auto a = std::make_unique<client::LeaderElector>(&ca, config("a"));
  auto b = std::make_unique<client::LeaderElector>(&cb, config("b"));
  a->Start();
  b->Start();
  ASSERT_TRUE(Eventually([&] { return a->IsLeader() || b->IsLeader(); }));
  ASSERT_TRUE(
      Consistently([&] { return !(a->IsLeader() && b->IsLeader()); }, std::chrono::seconds(1)))
      << "two leaders at once";
  auto& leader = a->IsLeader() ? a : b;
  auto& follower = a->IsLeader() ? b : a;
  leader->Stop();  // gives the lease up
  EXPECT_TRUE(Eventually([&] { return follower->IsLeader(); }));
  auto lease = ca.Get<api::Lease>("leases", "kube-system", "mkube-scheduler");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->spec().lease_transitions(), 1);
  follower->Stop();
}

TEST(Tls, ClientsVerifyTheApiserverAgainstTheClusterCa) {
  Cluster cluster;
  ASSERT_TRUE(
      cluster
          .Start({.apiserver = false, .nodes = {}, .scheduler = false, .controller_manager = false})
          .ok());
  const TempDir& dir = cluster.dir();
  const std::string root = std::string(MKUBE_SOURCE_DIR);
  auto made = RunCommand({root + "/deploy/lib/certs.sh", dir.Sub("pki")});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto other = RunCommand({root + "/deploy/lib/certs.sh", dir.Sub("other-pki")});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  std::ofstream(dir.Sub("tokens.csv")) << kTokens;

  // Without a certificate and without --insecure-plaintext it refuses to start.
  auto refused =
      RunCommand({BinDir() + "/mkube-apiserver", "--listen", "127.0.0.1:0", "--store-endpoints",
                  cluster.store_address(), "--token-file", dir.Sub("tokens.csv")});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("no TLS certificate given"), std::string::npos) << refused.err;

  Subprocess api({BinDir() + "/mkube-apiserver", "--listen", "127.0.0.1:0", "--store-endpoints",
                  cluster.store_address(), "--token-file", dir.Sub("tokens.csv"), "--tls-cert-file",
                  dir.Sub("pki/apiserver.crt"), "--tls-private-key-file",
                  dir.Sub("pki/apiserver.key"), "--address-file", dir.Sub("api.addr")},
                 dir.Sub("api.log"));
  auto addr = WaitForFileLine(dir.Sub("api.addr"), std::chrono::seconds(30));
  ASSERT_TRUE(addr.has_value()) << ReadFile(dir.Sub("api.log"));

  auto options = [&](const std::string& ca_file) {
    client::ClientOptions o;
    o.address = *addr;
    o.token = "admin-token";
    o.ca_pem = ca_file.empty() ? "" : ReadFile(ca_file);
    o.read_attempts = 1;
    o.timeout = std::chrono::seconds(3);
    return o;
  };
  client::GrpcClient trusted(options(dir.Sub("pki/ca.crt")));
  EXPECT_TRUE(trusted.Get<api::Namespace>("namespaces", "", "default").ok());
  client::GrpcClient wrong_ca(options(dir.Sub("other-pki/ca.crt")));
  EXPECT_FALSE(wrong_ca.Get<api::Namespace>("namespaces", "", "default").ok());
  client::GrpcClient plaintext(options(""));
  EXPECT_FALSE(plaintext.Get<api::Namespace>("namespaces", "", "default").ok());
}

}  // namespace
}  // namespace mkube::testing
