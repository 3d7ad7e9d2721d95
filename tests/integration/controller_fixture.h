#pragma once

// The cluster every controller-manager integration test runs on, and what they share: the
// seeds' Deployment, placement and availability helpers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/labels.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"
#include "tests/util/cluster_suite.h"
#include "tests/util/eventually.h"

namespace mkube::testing {

inline constexpr char kMyapp[] = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: myapp
spec:
  replicas: 3
  selector:
    matchLabels:
      app: myapp
  template:
    metadata:
      labels:
        app: myapp
    spec:
      containers:
      - name: myapp
        image: soscscs/myapp:v1
        ports:
        - containerPort: 80
)";

class ControllerTest : public ClusterSuite {
 protected:
  static void SetUpTestSuite() {
    // Short times: a node is lost 3 s after its last lease renewal (every 500 ms), and its
    // pods tolerate that for 2 s.
    StartCluster({.controller_manager_flags = {"--node-monitor-grace-period=3s",
                                               "--node-monitor-period=500ms"},
                  .apiserver_flags = {"--default-not-ready-toleration-seconds=2",
                                      "--default-unreachable-toleration-seconds=2"},
                  .agent_flags = {"--node-lease-duration-seconds=2"}});
  }
  void TearDown() override {
    for (const char* kind : {"deployments", "replicasets", "replicationcontrollers",
                             "poddisruptionbudgets", "daemonsets", "cronjobs", "jobs"}) {
      Ctl({"delete", kind, "--all"});
    }
    Ctl({"delete", "pods", "--all", "--grace-period=0", "--force"});
    // A pod left over would be counted by the next test.
    EXPECT_TRUE(Eventually([] { return Pods("").empty(); }, std::chrono::seconds(20)))
        << "pods still there 20 s after deleting them all:\n"
        << Ctl({"get", "pods", "-o", "wide"}).out;
  }

  // Pods (not being deleted) whose labels match `selector`.
  static std::vector<api::Pod> Pods(const std::string& selector) {
    apiserver::ListRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_label_selector(selector);
    std::vector<api::Pod> out;
    auto list = cluster_->client()->List(req);
    if (!list.ok()) return out;
    for (const auto& bytes : list->items()) {
      api::Pod p;
      p.ParseFromString(bytes);
      if (p.metadata().deletion_timestamp().empty()) out.push_back(std::move(p));
    }
    return out;
  }
  static int RunningWith(const std::string& selector, const std::string& image) {
    int n = 0;
    for (const auto& p : Pods(selector)) {
      if (p.status().phase() == "Running" && p.spec().containers(0).image() == image) ++n;
    }
    return n;
  }
  static ::testing::AssertionResult RolledOut(const std::string& name) {
    auto r = Ctl({"rollout", "status", "deployment/" + name, "--timeout=60s"}, "",
                 std::chrono::seconds(70));
    if (r.exit_code == 0 && r.out.find("successfully rolled out") != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << r.out << r.err << Ctl({"get", "rs", "-o", "wide"}).out
                                         << Ctl({"get", "pods", "-o", "wide"}).out
                                         << cluster_->Logs();
  }
};

// The NODE of each running pod matching `selector`, sorted.
inline std::vector<std::string> NodesOf(const std::vector<api::Pod>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) {
    if (p.status().phase() == "Running") out.push_back(p.spec().node_name());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Follows the pods of `selector` from now on and remembers the fewest that were ready and
// not being deleted, checked on every event.
class AvailabilityWatch {
 public:
  AvailabilityWatch(client::ApiClient* client, const std::string& selector) {
    apiserver::ListRequest list;
    list.set_resource("pods");
    list.set_namespace_("default");
    list.set_label_selector(selector);
    auto pods = client->List(list);
    if (pods.ok()) {
      for (const auto& bytes : pods->items()) Apply("ADDED", bytes);
    }
    apiserver::WatchRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_label_selector(selector);
    req.set_resource_version(pods.ok() ? pods->resource_version() : "");
    stream_ = client->Watch(req);
    thread_ = std::thread([this] {
      apiserver::WatchEvent ev;
      while (stream_->Read(&ev)) {
        if (ev.type() == "BOOKMARK") continue;
        Apply(ev.type(), ev.object());
        ++events_;
        fewest_ = std::min(fewest_.load(), Available());
      }
    });
  }
  ~AvailabilityWatch() { Stop(); }
  void Stop() {
    if (!thread_.joinable()) return;
    stream_->Cancel();
    thread_.join();
  }
  int fewest() const { return fewest_.load(); }
  int events() const { return events_.load(); }
  std::set<std::string> images_seen_ready() const { return ready_images_; }

 private:
  void Apply(const std::string& type, const std::string& bytes) {
    api::Pod p;
    p.ParseFromString(bytes);
    const std::string& name = p.metadata().name();
    if (type == "DELETED") {
      pods_.erase(name);
      return;
    }
    pods_[name] = p;
    bool ready = false;
    for (const auto& c : p.status().conditions()) {
      if (c.type() == "Ready") ready = c.status() == "True";
    }
    if (ready) ready_images_.insert(p.spec().containers(0).image());
  }
  int Available() const {
    int n = 0;
    for (const auto& [name, p] : pods_) {
      if (!p.metadata().deletion_timestamp().empty()) continue;
      for (const auto& c : p.status().conditions()) {
        if (c.type() == "Ready" && c.status() == "True") ++n;
      }
    }
    return n;
  }

  std::map<std::string, api::Pod> pods_;  // only the watch thread, after construction
  std::set<std::string> ready_images_;
  std::atomic<int> fewest_{1 << 30};
  std::atomic<int> events_{0};
  client::WatchStreamPtr stream_;
  std::thread thread_;
};

}  // namespace mkube::testing
