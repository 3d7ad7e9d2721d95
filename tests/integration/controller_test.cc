// mkube-controller-manager through the real binaries, its workload controllers: the seeds'
// Deployment with 3 replicas on a cluster of real agents; scaling; a rolling update to a new
// image that never has fewer available pods than maxUnavailable allows (checked on every pod
// event) and its undo; pause, resume and restart; a ReplicationController replacing a deleted
// pod; cascading deletes; a DaemonSet; Jobs; leader election with kill -9.
#include "tests/integration/controller_fixture.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(ControllerTest, SeedsDeploymentRunsScalesRollsOutAndRollsBack) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kMyapp).exit_code, 0);
  ASSERT_TRUE(RolledOut("myapp"));
  ASSERT_TRUE(Eventually([] { return RunningWith("app=myapp", "soscscs/myapp:v1") == 3; },
                         std::chrono::seconds(30)));
  for (const auto& p : Pods("app=myapp")) {
    EXPECT_NE(p.spec().node_name(), "master01") << "the master is tainted";
    EXPECT_EQ(p.metadata().owner_references(0).kind(), "ReplicaSet");
    EXPECT_THAT(p.metadata().name(), ::testing::StartsWith("myapp-"));
  }
  EXPECT_THAT(Ctl({"get", "deployment", "myapp"}).out, ::testing::ContainsRegex("myapp +3/3 +3 +3"));
  auto rs = Ctl({"get", "rs"}).out;
  EXPECT_THAT(rs, ::testing::ContainsRegex("myapp-[a-z0-9]+ +3 +3 +3")) << rs;

  // Scale to 5 and back to 1.
  EXPECT_THAT(Ctl({"scale", "deployment", "myapp", "--replicas=5"}).out,
              HasSubstr("deployment.apps/myapp scaled"));
  EXPECT_TRUE(Eventually([] { return RunningWith("app=myapp", "soscscs/myapp:v1") == 5; },
                         std::chrono::seconds(30)));
  ASSERT_TRUE(RolledOut("myapp"));
  ASSERT_EQ(Ctl({"scale", "deployment/myapp", "--replicas=1"}).exit_code, 0);
  EXPECT_TRUE(Eventually([] { return Pods("app=myapp").size() == 1; }, std::chrono::seconds(30)));
  ASSERT_TRUE(RolledOut("myapp"));
  ASSERT_EQ(Ctl({"scale", "deployment/myapp", "--replicas=3"}).exit_code, 0);
  ASSERT_TRUE(RolledOut("myapp"));
  ASSERT_TRUE(Eventually([] { return RunningWith("app=myapp", "soscscs/myapp:v1") == 3; },
                         std::chrono::seconds(30)));

  // The seeds' image upgrade: 3 replicas, maxSurge 1, maxUnavailable 0 - never fewer than 3.
  AvailabilityWatch watch(cluster_->client(), "app=myapp");
  EXPECT_THAT(Ctl({"set", "image", "deployment/myapp", "myapp=soscscs/myapp:v2"}).out,
              HasSubstr("deployment.apps/myapp image updated"));
  ASSERT_TRUE(RolledOut("myapp"));
  ASSERT_TRUE(Eventually([] { return RunningWith("app=myapp", "soscscs/myapp:v2") == 3; },
                         std::chrono::seconds(30)));
  ASSERT_TRUE(Eventually([] { return Pods("app=myapp").size() == 3; }, std::chrono::seconds(30)));
  watch.Stop();
  EXPECT_GE(watch.fewest(), 3) << "more than maxUnavailable (0) went down";
  EXPECT_GE(watch.events(), 6) << "three pods made ready and three deleted, at least";
  EXPECT_TRUE(watch.images_seen_ready().contains("soscscs/myapp:v2"));
  auto history = Ctl({"rollout", "history", "deployment/myapp"}).out;
  EXPECT_THAT(history, ::testing::ContainsRegex("REVISION +CHANGE-CAUSE\n1 +<none>\n2 +<none>"))
      << history;

  // Undo: back to v1 as revision 3.
  EXPECT_THAT(Ctl({"rollout", "undo", "deployment/myapp"}).out,
              HasSubstr("deployment.apps/myapp rolled back"));
  ASSERT_TRUE(RolledOut("myapp"));
  EXPECT_TRUE(Eventually([] { return RunningWith("app=myapp", "soscscs/myapp:v1") == 3; },
                         std::chrono::seconds(30)));
  history = Ctl({"rollout", "history", "deployment/myapp"}).out;
  EXPECT_THAT(history, ::testing::ContainsRegex("\n2 +<none>\n3 +<none>")) << history;
  auto d = cluster_->client()->Get<api::Deployment>("deployments", "default", "myapp");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->metadata().annotations().at("deployment.kubernetes.io/revision"), "3");
  EXPECT_THAT(Ctl({"get", "events"}).out, HasSubstr("Scaled up replica set myapp-"));
}

TEST_F(ControllerTest, PausedDeploymentWaitsResumeRollsOutRestartReplacesThePods) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kMyapp).exit_code, 0);
  ASSERT_TRUE(RolledOut("myapp"));
  EXPECT_THAT(Ctl({"rollout", "pause", "deployment/myapp"}).out,
              HasSubstr("deployment.apps/myapp paused"));
  EXPECT_THAT(Ctl({"rollout", "pause", "deployment/myapp"}).err,
              HasSubstr("deployments.apps \"myapp\" is already paused"));
  ASSERT_EQ(Ctl({"set", "image", "deployment/myapp", "myapp=soscscs/myapp:v2"}).exit_code, 0);
  // Paused: the controller writes the condition, and no second ReplicaSet appears.
  ASSERT_TRUE(Eventually([] {
    return Ctl({"get", "deployment", "myapp", "-o", "yaml"}).out.find("DeploymentPaused") !=
           std::string::npos;
  }));
  EXPECT_EQ(RunningWith("app=myapp", "soscscs/myapp:v2"), 0);
  apiserver::ListRequest req;
  req.set_resource("replicasets");
  req.set_namespace_("default");
  auto sets = cluster_->client()->List(req);
  ASSERT_TRUE(sets.ok()) << sets.status();
  EXPECT_EQ(sets->items_size(), 1);
  EXPECT_THAT(Ctl({"rollout", "resume", "deployment/myapp"}).out,
              HasSubstr("deployment.apps/myapp resumed"));
  ASSERT_TRUE(RolledOut("myapp"));
  EXPECT_TRUE(Eventually([] { return RunningWith("app=myapp", "soscscs/myapp:v2") == 3; },
                         std::chrono::seconds(30)));
  ASSERT_TRUE(Eventually([] { return Pods("app=myapp").size() == 3; }, std::chrono::seconds(30)));
  std::set<std::string> before;
  for (const auto& p : Pods("app=myapp")) before.insert(p.metadata().name());
  EXPECT_THAT(Ctl({"rollout", "restart", "deployment/myapp"}).out,
              HasSubstr("deployment.apps/myapp restarted"));
  ASSERT_TRUE(RolledOut("myapp"));
  ASSERT_TRUE(Eventually([&] {
    auto pods = Pods("app=myapp");
    if (pods.size() != 3) return false;
    for (const auto& p : pods) {
      if (before.contains(p.metadata().name())) return false;
    }
    return true;
  }, std::chrono::seconds(40)));
}

TEST_F(ControllerTest, AReplicationControllerReplacesADeletedPod) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, R"(apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 2
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx
)").exit_code,
            0);
  ASSERT_TRUE(Eventually([] { return RunningWith("app=nginx", "nginx") == 2; },
                         std::chrono::seconds(30)));
  const std::string victim = Pods("app=nginx").at(0).metadata().name();
  ASSERT_EQ(Ctl({"delete", "pod", victim}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] {
    auto pods = Pods("app=nginx");
    int running = 0;
    for (const auto& p : pods) {
      if (p.metadata().name() != victim && p.status().phase() == "Running") ++running;
    }
    return running == 2;
  }, std::chrono::seconds(30)));
  EXPECT_THAT(Ctl({"get", "rc", "nginx"}).out, ::testing::ContainsRegex("nginx +2 +2 +2"));
}

TEST_F(ControllerTest, DeletingADeploymentTakesItsReplicaSetAndPodsUnlessOrphaned) {
  apiserver::ListRequest sets;
  sets.set_resource("replicasets");
  sets.set_namespace_("default");
  auto count_sets = [&] {
    auto l = cluster_->client()->List(sets);
    return l.ok() ? l->items_size() : -1;
  };
  // Orphan: the deployment goes, its ReplicaSet and pods stay, no longer owned.
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kMyapp).exit_code, 0);
  ASSERT_TRUE(RolledOut("myapp"));
  EXPECT_THAT(Ctl({"delete", "deployment", "myapp", "--cascade=orphan"}).out,
              HasSubstr("deployment.apps \"myapp\" deleted"));
  ASSERT_TRUE(Eventually([&] {
    auto l = cluster_->client()->List(sets);
    if (!l.ok() || l->items_size() != 1) return false;
    api::ReplicaSet rs;
    rs.ParseFromString(l->items(0));
    return rs.metadata().owner_references_size() == 0;
  }, std::chrono::seconds(30))) << Ctl({"get", "rs", "-o", "yaml"}).out << cluster_->Logs();
  EXPECT_EQ(Pods("app=myapp").size(), 3u);
  // The orphaned set, deleted in the foreground: the pods go first, then the set; delete
  // waits for it.
  auto rs = Ctl({"get", "rs", "-o", "name"}).out;
  rs.erase(rs.find_last_not_of('\n') + 1);
  auto r = Ctl({"delete", rs, "--cascade=foreground"}, "", std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_sets(), 0);
  EXPECT_TRUE(Pods("app=myapp").empty()) << "a foreground delete returns once the pods are gone";
  // Background (the default): everything goes.
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kMyapp).exit_code, 0);
  ASSERT_TRUE(RolledOut("myapp"));
  ASSERT_EQ(Ctl({"delete", "deployment", "myapp"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return count_sets() == 0 && Pods("app=myapp").empty(); },
                         std::chrono::seconds(30)));
  EXPECT_THAT(Ctl({"delete", "deployment", "x", "--cascade=sideways"}).err,
              HasSubstr("error: invalid cascade value (sideways). Must be \"background\", "
                        "\"foreground\", or \"orphan\""));
}

TEST_F(ControllerTest, ADaemonSetRunsOnEveryUntaintedNodeAndOnANodeAddedLater) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, R"(apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: busybox
        command: ['sleep', '3600']
)").exit_code,
            0);
  ASSERT_TRUE(Eventually([] {
    return NodesOf(Pods("app=agent")) == std::vector<std::string>{"node01", "node02"};
  }, std::chrono::seconds(30))) << Ctl({"get", "pods", "-o", "wide"}).out;
  EXPECT_TRUE(Eventually([] {
    return Ctl({"get", "ds", "agent"}).out.find("agent   2         2         2       2            2") !=
           std::string::npos;
  })) << Ctl({"get", "ds"}).out;
  // A node registered later (without an agent): its pod is made and bound there.
  ASSERT_EQ(Ctl({"create", "-f", "-"}, "apiVersion: v1\nkind: Node\nmetadata:\n  name: node03\n")
                .exit_code,
            0);
  ASSERT_TRUE(Eventually([] {
    for (const auto& p : Pods("app=agent")) {
      if (p.spec().node_name() == "node03") return true;
    }
    return false;
  }, std::chrono::seconds(30))) << Ctl({"get", "pods", "-o", "wide"}).out;
  // drain leaves daemon pods alone with --ignore-daemonsets, and refuses without it.
  auto refused = Ctl({"drain", "node01"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("cannot delete DaemonSet-managed Pods"));
  auto drained = Ctl({"drain", "node01", "--ignore-daemonsets"});
  EXPECT_EQ(drained.exit_code, 0) << drained.err;
  EXPECT_THAT(drained.err, HasSubstr("Warning: ignoring DaemonSet-managed Pods: default/agent-"));
  EXPECT_THAT(NodesOf(Pods("app=agent")), ::testing::Contains("node01"));
  Ctl({"uncordon", "node01"});
  // The node goes: so does its pod.
  ASSERT_EQ(Ctl({"delete", "node", "node03"}).exit_code, 0);
  EXPECT_TRUE(Eventually([] {
    for (const auto& p : Pods("app=agent")) {
      if (p.spec().node_name() == "node03") return false;
    }
    return true;
  }, std::chrono::seconds(40)));
}

TEST_F(ControllerTest, AJobRunsToCompleteAndAFailingOneToFailed) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, R"(apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: busybox
        command: ['sh', '-c', 'echo 3.14159']
---
apiVersion: batch/v1
kind: Job
metadata:
  name: broken
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: broken
        image: busybox
        command: ['sh', '-c', 'exit 3']
)").exit_code,
            0);
  auto condition = [](const std::string& name) {
    auto j = cluster_->client()->Get<api::Job>("jobs", "default", name);
    if (!j.ok()) return std::string();
    for (const auto& c : j->status().conditions()) {
      if (c.status() == "True") return c.type() + " " + c.reason();
    }
    return std::string();
  };
  EXPECT_TRUE(Eventually([&] { return condition("pi") == "Complete "; }, std::chrono::seconds(30)))
      << Ctl({"get", "pods"}).out;
  EXPECT_THAT(Ctl({"get", "job", "pi"}).out, ::testing::ContainsRegex("pi +2/2"));
  auto pods = Ctl({"get", "pods", "-l", "job-name=pi"}).out;
  EXPECT_THAT(pods, ::testing::ContainsRegex("pi-[a-z0-9]+ +0/1 +Completed"));
  EXPECT_THAT(Ctl({"get", "events"}).out, HasSubstr("Job completed"));
  EXPECT_TRUE(Eventually([&] { return condition("broken") == "Failed BackoffLimitExceeded"; },
                         std::chrono::seconds(30)))
      << Ctl({"get", "pods"}).out;
  EXPECT_THAT(Ctl({"get", "pods", "-l", "job-name=broken"}).out,
              ::testing::ContainsRegex("broken-[a-z0-9]+ +0/1 +Error"));
  EXPECT_EQ(cluster_->client()->Get<api::Job>("jobs", "default", "broken")->status().failed(), 2);
  // Deleting a Job (mkubectl sends Background) takes its pods along.
  ASSERT_EQ(Ctl({"delete", "jobs", "--all"}).exit_code, 0);
  EXPECT_TRUE(Eventually([] {
    return Pods("job-name=pi").empty() && Pods("job-name=broken").empty();
  }, std::chrono::seconds(30)));
}

TEST_F(ControllerTest, KillingTheLeaderHandsOverAndNothingIsCreatedTwice) {
  std::unique_ptr<ControllerManagerProcess> standby;
  ASSERT_TRUE(cluster_->StartControllerManager("cm-b", &standby).ok());
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kMyapp).exit_code, 0);
  ASSERT_TRUE(RolledOut("myapp"));
  cluster_->controller_manager().Kill9();
  ASSERT_EQ(Ctl({"scale", "deployment/myapp", "--replicas=5"}).exit_code, 0);
  ASSERT_TRUE(RolledOut("myapp"));
  EXPECT_EQ(Pods("app=myapp").size(), 5u);
  EXPECT_THAT(standby->log(), HasSubstr("leading"));
  // Every pod the deployment's set made is one of the five.
  std::set<std::string> sets;
  apiserver::ListRequest req;
  req.set_resource("replicasets");
  req.set_namespace_("default");
  auto list = cluster_->client()->List(req);
  ASSERT_TRUE(list.ok()) << list.status();
  for (const auto& bytes : list->items()) {
    api::ReplicaSet rs;
    rs.ParseFromString(bytes);
    sets.insert(rs.metadata().uid());
  }
  int created = 0;
  req.set_resource("events");
  list = cluster_->client()->List(req);
  ASSERT_TRUE(list.ok()) << list.status();
  for (const auto& bytes : list->items()) {
    api::Event e;
    e.ParseFromString(bytes);
    if (e.reason() == "SuccessfulCreate" && sets.contains(e.involved_object().uid())) {
      created += e.count() > 0 ? e.count() : 1;
    }
  }
  EXPECT_EQ(created, 5);
  // The first controller-manager back, as a standby.
  ASSERT_TRUE(cluster_->controller_manager().Start().ok());
}

}  // namespace
}  // namespace mkube::testing
