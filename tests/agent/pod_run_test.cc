#include "agent/pods/pod_run.h"

#include <gtest/gtest.h>

#include "api/object.h"

namespace mkube::agent::pods {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

api::ContainerStateTerminated Exited(int code) {
  api::ContainerStateTerminated t;
  t.set_exit_code(code);
  t.set_reason(code == 0 ? "Completed" : "Error");
  return t;
}

// A container in one of the states the agent keeps track of.
ContainerRun Container(const std::string& state, int last_exit = 0) {
  ContainerRun c;
  c.name = "c";
  if (state == "creating") return c;
  if (state == "running") {
    c.pid = 42;
    c.started_at = kT0;
    return c;
  }
  c.last = Exited(last_exit);
  if (state == "done") c.done = true;
  if (state == "backoff") c.waiting_reason = "CrashLoopBackOff";
  return c;
}

PodRun PodOf(std::vector<ContainerRun> containers) {
  auto pod = std::make_shared<api::Pod>();
  pod->mutable_metadata()->set_name("p");
  for (const auto& c : containers) {
    auto* spec = pod->mutable_spec()->add_containers();
    spec->set_name(c.name);
    spec->set_image("busybox");
  }
  PodRun run;
  run.pod = pod;
  run.ip = "127.1.0.2";
  run.start_time = kT0;
  run.containers = std::move(containers);
  return run;
}

TEST(PodPhase, AsTheKubeletComputesIt) {
  struct Case {
    std::string name;
    std::vector<std::pair<std::string, int>> containers;  // state, last exit code
    std::string phase;
  } cases[] = {
      {"a container not started yet keeps the pod Pending", {{"running", 0}, {"creating", 0}}, "Pending"},
      {"all running", {{"running", 0}, {"running", 0}}, "Running"},
      {"one in back-off is still Running", {{"running", 0}, {"backoff", 1}}, "Running"},
      {"all exited 0 and done", {{"done", 0}, {"done", 0}}, "Succeeded"},
      {"one failed, all done", {{"done", 0}, {"done", 2}}, "Failed"},
      {"done and running", {{"done", 0}, {"running", 0}}, "Running"},
  };
  for (const auto& c : cases) {
    std::vector<ContainerRun> runs;
    for (const auto& [state, code] : c.containers) {
      runs.push_back(Container(state, code));
      runs.back().name = "c" + std::to_string(runs.size());
    }
    EXPECT_EQ(PodPhase(PodOf(runs)), c.phase) << c.name;
  }
}

TEST(BuildStatus, ContainerStatesAndConditions) {
  auto running = Container("running");
  running.restart_count = 2;
  running.last = Exited(1);
  auto backoff = Container("backoff", 1);
  backoff.name = "b";
  backoff.waiting_message = "back-off 10s restarting failed container=b pod=p_default(u)";
  auto creating = Container("creating");
  creating.name = "new";
  PodRun run = PodOf({running, backoff, creating});
  api::PodStatus st = BuildStatus(run, "127.0.0.1", kT0 + absl::Seconds(5));
  EXPECT_EQ(st.phase(), "Pending");
  EXPECT_EQ(st.host_ip(), "127.0.0.1");
  EXPECT_EQ(st.pod_ip(), "127.1.0.2");
  EXPECT_EQ(st.start_time(), "2023-11-14T22:13:20Z");
  ASSERT_EQ(st.container_statuses_size(), 3);
  const auto& r = st.container_statuses(0);
  EXPECT_EQ(r.state().running().started_at(), "2023-11-14T22:13:20Z");
  EXPECT_EQ(r.last_state().terminated().exit_code(), 1);
  EXPECT_EQ(r.restart_count(), 2);
  EXPECT_TRUE(r.ready());
  const auto& b = st.container_statuses(1);
  EXPECT_EQ(b.state().waiting().reason(), "CrashLoopBackOff");
  EXPECT_EQ(b.last_state().terminated().exit_code(), 1);
  EXPECT_FALSE(b.ready());
  EXPECT_EQ(st.container_statuses(2).state().waiting().reason(), "ContainerCreating");
  ASSERT_EQ(st.conditions_size(), 4);
  EXPECT_EQ(st.conditions(1).type(), "Ready");
  EXPECT_EQ(st.conditions(1).status(), "False");
  EXPECT_EQ(st.conditions(1).reason(), "ContainersNotReady");
  EXPECT_EQ(st.conditions(1).message(), "containers with unready status: [b new]");
}

TEST(BuildStatus, AFinishedPodShowsTerminatedStatesAndKeepsTransitionTimes) {
  auto done = Container("done", 0);
  done.previous = Exited(3);
  PodRun run = PodOf({done});
  api::PodStatus first = BuildStatus(run, "127.0.0.1", kT0);
  EXPECT_EQ(first.phase(), "Succeeded");
  EXPECT_EQ(first.container_statuses(0).state().terminated().reason(), "Completed");
  EXPECT_EQ(first.container_statuses(0).last_state().terminated().exit_code(), 3);
  EXPECT_EQ(first.conditions(1).reason(), "PodCompleted");
  // Reported again later: conditions that did not change keep their transition time.
  auto pod = std::make_shared<api::Pod>(*run.pod);
  *pod->mutable_status() = first;
  run.pod = pod;
  api::PodStatus again = BuildStatus(run, "127.0.0.1", kT0 + absl::Minutes(1));
  EXPECT_TRUE(api::Equal(again, first)) << again.DebugString() << "\nvs\n" << first.DebugString();
}

}  // namespace
}  // namespace mkube::agent::pods
