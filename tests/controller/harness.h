#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/object.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "client/testing/fake_client.h"
#include "client/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"
#include "tests/util/eventually.h"

namespace mkube::controller::testing {

// A fake cluster for controller tests: the fake clientset on a fake clock, one informer per
// resource the controllers read, and an event recorder. Tests build a controller on it, write
// objects, call ASSERT_TRUE(Settle()) so the caches have seen them, then call the
// controller's Sync directly (no workers run) and look at what it wrote.
class Harness {
 public:
  client::testing::FakeClock clock;
  client::testing::FakeClient fake{&clock};
  client::EventRecorder events{&fake, "test", "", 1000, &clock};
  client::Informer<api::Pod> pods{&fake, "pods", Options()};
  client::Informer<api::Node> nodes{&fake, "nodes", Options()};
  client::Informer<api::ReplicaSet> replica_sets{&fake, "replicasets", Options()};
  client::Informer<api::ReplicationController> replication_controllers{
      &fake, "replicationcontrollers", Options()};
  client::Informer<api::Deployment> deployments{&fake, "deployments", Options()};
  client::Informer<api::Lease> leases{&fake, "leases", Options("kube-node-lease")};

  ~Harness() { StopInformers(); }

  // After the controller under test has added its handlers.
  void Start() {
    pods.Start();
    nodes.Start();
    replica_sets.Start();
    replication_controllers.Start();
    deployments.Start();
    leases.Start();
    EXPECT_TRUE(Settle());
  }
  void StopInformers() {
    leases.Stop();
    deployments.Stop();
    replication_controllers.Stop();
    replica_sets.Stop();
    nodes.Stop();
    pods.Stop();
  }
  // Waits (real time) until every informer's cache holds what the fake holds; a failure names
  // the caches still behind. Every caller asserts it: a Sync on stale caches proves nothing.
  [[nodiscard]] ::testing::AssertionResult Settle() {
    if (mkube::testing::Eventually([this] { return Behind().empty(); })) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "informer caches still behind the fake after 10 s:"
                                         << Behind();
  }

  template <typename T>
  std::vector<T> List(const std::string& resource, const std::string& ns = "default") {
    apiserver::ListRequest req;
    req.set_resource(resource);
    req.set_namespace_(ns);
    std::vector<T> out;
    auto list = fake.List(req);
    if (!list.ok()) return out;
    for (const auto& bytes : list->items()) out.emplace_back().ParseFromString(bytes);
    return out;
  }
  template <typename T>
  T Get(const std::string& resource, const std::string& name, const std::string& ns = "default") {
    auto r = fake.Get<T>(resource, ns, name);
    return r.ok() ? *r : T();
  }
  std::vector<api::Pod> Pods(const std::string& ns = "default") {
    return List<api::Pod>("pods", ns);
  }
  // Marks a pod Running and Ready (since `ready_since`, default now), as its agent would.
  void MakeReady(const api::Pod& pod, absl::Time ready_since = absl::InfinitePast()) {
    api::Pod p = pod;
    p.mutable_status()->set_phase("Running");
    p.mutable_status()->clear_conditions();
    auto* c = p.mutable_status()->add_conditions();
    c->set_type("Ready");
    c->set_status("True");
    c->set_last_transition_time(
        api::Rfc3339(ready_since == absl::InfinitePast() ? clock.Now() : ready_since));
    auto st = fake.Update<api::Pod>("pods", p.metadata().namespace_(), p, "status");
    EXPECT_TRUE(st.ok()) << p.metadata().name() << ": " << st.status();
  }
  // Every pod of the namespace Ready.
  void MakeAllReady(const std::string& ns = "default") {
    for (const auto& p : Pods(ns)) {
      if (p.metadata().deletion_timestamp().empty()) MakeReady(p);
    }
  }
  // Events recorded so far, as "Reason: message".
  std::vector<std::string> Events() {
    events.Flush();
    std::vector<std::string> out;
    for (const auto& e : List<api::Event>("events", "")) {
      out.push_back(e.reason() + ": " + e.message());
    }
    return out;
  }

 private:
  client::InformerOptions Options(const std::string& ns = "") {
    client::InformerOptions o;
    o.clock = &clock;
    o.ns = ns;
    return o;
  }
  // The resources whose cache differs from the fake, each preceded by a space.
  std::string Behind() {
    std::string out;
    if (!Caught(pods, "pods")) out += " pods";
    if (!Caught(nodes, "nodes")) out += " nodes";
    if (!Caught(replica_sets, "replicasets")) out += " replicasets";
    if (!Caught(replication_controllers, "replicationcontrollers")) {
      out += " replicationcontrollers";
    }
    if (!Caught(deployments, "deployments")) out += " deployments";
    if (!Caught(leases, "leases", "kube-node-lease")) out += " leases";
    return out;
  }
  template <typename T>
  bool Caught(client::Informer<T>& informer, const std::string& resource,
              const std::string& ns = "") {
    std::map<std::string, std::string> want, have;
    for (const auto& obj : List<T>(resource, ns)) {
      want[client::KeyOf(obj)] = obj.metadata().resource_version();
    }
    for (const auto& obj : informer.List()) {
      have[client::KeyOf(*obj)] = obj->metadata().resource_version();
    }
    return want == have;
  }
};

// A pod template running one container of `image`, labelled `labels`.
inline api::PodTemplateSpec Template(const std::map<std::string, std::string>& labels,
                                     const std::string& image = "soscscs/myapp:v1") {
  api::PodTemplateSpec t;
  for (const auto& [k, v] : labels) (*t.mutable_metadata()->mutable_labels())[k] = v;
  auto* c = t.mutable_spec()->add_containers();
  c->set_name("myapp");
  c->set_image(image);
  return t;
}

}  // namespace mkube::controller::testing
