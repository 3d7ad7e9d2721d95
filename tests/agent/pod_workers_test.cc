// The pod loop's decisions, on the fake clientset, clock and processes: restart policy by
// exit code, the crash-loop back-off, graceful deletion, adoption of what an earlier agent
// left running, image pull failures, and a loop driven by keys rather than by rescans.
#include "agent/pods/pod_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "agent/testing/fake_process_runner.h"
#include "client/testing/fake_client.h"
#include "client/testing/fake_clock.h"
#include "tests/agent/fake_registry.h"
#include "tests/util/eventually.h"
#include "tests/util/process.h"

namespace mkube::agent::pods {
namespace {

using mkube::testing::Eventually;

class PodWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_.Sub("busybox.tar"), std::ios::binary)
        << agent::image::ImageArchive({"busybox:latest"});
    EXPECT_TRUE(images_.ServeArchive(dir_.Sub("busybox.tar")).ok());
  }
  void TearDown() override {
    if (workers_) workers_->Stop(absl::ZeroDuration());
    if (pods_) pods_->Stop();
  }
  // Without waiting for the pod cache to sync (and for the pod workers to settle) when told not to.
  void Start(bool wait = true) {
    pods_ = std::make_unique<client::Informer<api::Pod>>(
        &fake_, "pods", client::InformerOptions{.field_selector = "spec.nodeName=node01", .clock = &clock_});
    PodWorkersOptions o;
    o.node_name = "node01";
    o.node_ip = "127.1.2.1";
    o.root_dir = dir_.Sub("node");
    o.clock = &clock_;
    runtime_ = std::make_unique<runtime::ContainerRuntime>(
        &images_, &runner_, runtime::RuntimeOptions{.clock = &clock_});
    network_ = std::make_unique<PodNetwork>(o.node_ip, "127.1.0.0/24", &events_);
    workers_ = std::make_unique<PodWorkers>(&fake_, pods_.get(), runtime_.get(), network_.get(),
                                            &events_, o);
    pods_->AddHandlers(workers_->Handlers());
    // Runs after the pod workers' handlers: once it has seen a version, they have queued
    // its key.
    auto seen = [this](const client::Informer<api::Pod>::Ptr& pod) {
      const int64_t rv = std::stoll(pod->metadata().resource_version());
      for (int64_t cur = seen_rv_; cur < rv && !seen_rv_.compare_exchange_weak(cur, rv);) {
      }
    };
    pods_->AddHandlers({seen, [seen](const auto&, const auto& pod) { seen(pod); }, seen});
    pods_->Start();
    if (!wait) return;
    ASSERT_TRUE(pods_->WaitForCacheSync(std::chrono::seconds(10)));
    ASSERT_TRUE(Settle());
  }
  // Syncs until the pod workers have been told of every write and no key is due at this time.
  [[nodiscard]] bool Settle() {
    return Eventually([&] {
      workers_->SyncReady();
      return seen_rv_ == fake_.resource_version() && workers_->SyncReady() == 0;
    });
  }
  [[nodiscard]] bool Advance(absl::Duration d) {
    clock_.Advance(d);
    return Settle();
  }
  api::Pod Create(const std::string& name, const std::string& policy,
                  const std::string& image = "busybox") {
    api::Pod pod;
    pod.mutable_metadata()->set_name(name);
    pod.mutable_spec()->set_node_name("node01");
    pod.mutable_spec()->set_restart_policy(policy);
    auto* c = pod.mutable_spec()->add_containers();
    c->set_name(name + "-c");
    c->set_image(image);
    auto created = fake_.Create("pods", "default", pod);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : pod;
  }
  api::Pod Get(const std::string& name) {
    auto pod = fake_.Get<api::Pod>("pods", "default", name);
    EXPECT_TRUE(pod.ok()) << pod.status();
    return pod.ok() ? *pod : api::Pod();
  }
  absl::Status Delete(const std::string& name, std::optional<int64_t> grace = std::nullopt) {
    apiserver::DeleteRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_name(name);
    if (grace) req.set_grace_period_seconds(*grace);
    return fake_.Delete(req).status();
  }
  int Restarts(const std::string& name) {
    const api::Pod pod = Get(name);
    return pod.status().container_statuses_size() ? pod.status().container_statuses(0).restart_count() : -1;
  }
  std::string Waiting(const std::string& name) {
    const api::Pod pod = Get(name);
    return pod.status().container_statuses_size()
               ? pod.status().container_statuses(0).state().waiting().reason()
               : "";
  }

  mkube::testing::TempDir dir_;
  client::testing::FakeClock clock_;
  client::testing::FakeClient fake_{&clock_};
  // Events go to an apiserver of their own, so that fake_ holds pods only and Settle can tell
  // when the informer has seen every write.
  client::testing::FakeClient event_sink_{&clock_};
  client::EventRecorder events_{&event_sink_, "kubelet", "node01", 1000, &clock_};
  agent::image::FakeRegistry remote_{agent::image::FakeRegistry::Auth::kNone};
  runtime::ImageStore images_{[this] {
    runtime::OciOptions oci{.dir = dir_.Sub("node/oci")};
    oci.registry.insecure.insert(remote_.host());
    return oci;
  }()};
  testing::FakeProcessRunner runner_;
  std::unique_ptr<client::Informer<api::Pod>> pods_;
  std::unique_ptr<runtime::ContainerRuntime> runtime_;
  std::unique_ptr<PodNetwork> network_;
  std::unique_ptr<PodWorkers> workers_;
  std::atomic<int64_t> seen_rv_{1};  // the fake starts at version 1, with nothing in it
};

TEST_F(PodWorkersTest, TheRestartPolicyDecidesWhetherAnEndedContainerRunsAgain) {
  struct Case {
    std::string policy;
    int exit_code;
    bool restarted;
    std::string phase;
  } cases[] = {
      {"Always", 0, true, "Running"},      {"Always", 1, true, "Running"},
      {"OnFailure", 0, false, "Succeeded"}, {"OnFailure", 3, true, "Running"},
      {"Never", 0, false, "Succeeded"},    {"Never", 2, false, "Failed"},
  };
  ASSERT_NO_FATAL_FAILURE(Start());
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    const std::string name = "p" + std::to_string(i);
    const std::string what = c.policy + " exit " + std::to_string(c.exit_code);
    Create(name, c.policy);
    ASSERT_TRUE(Settle());
    ASSERT_EQ(runner_.Running(name + "-c"), 1) << what;
    EXPECT_EQ(Get(name).status().phase(), "Running") << what;
    ASSERT_TRUE(runner_.Exit(name + "-c", c.exit_code));
    ASSERT_TRUE(Advance(absl::Milliseconds(100)));  // the next look for exits
    EXPECT_EQ(runner_.Starts(name + "-c"), c.restarted ? 2 : 1) << what;
    EXPECT_EQ(runner_.Running(name + "-c"), c.restarted ? 1 : 0) << what;
    EXPECT_EQ(Restarts(name), c.restarted ? 1 : 0) << what;
    EXPECT_EQ(Get(name).status().phase(), c.phase) << what;
  }
}

TEST_F(PodWorkersTest, ACrashingContainerBacksOffDoublingTo5MinutesAndResetsAfter10) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Create("crash", "Always");
  ASSERT_TRUE(Settle());
  ASSERT_TRUE(Settle());
  ASSERT_TRUE(runner_.Exit("crash-c", 1));
  ASSERT_TRUE(Advance(absl::Milliseconds(100)));
  ASSERT_EQ(runner_.Starts("crash-c"), 2) << "the first restart is immediate";
  int starts = 2;
  for (absl::Duration backoff : {absl::Seconds(10), absl::Seconds(20), absl::Seconds(40),
                                 absl::Seconds(80), absl::Seconds(160), absl::Seconds(300),
                                 absl::Seconds(300)}) {
    ASSERT_TRUE(runner_.Exit("crash-c", 1));
    ASSERT_TRUE(Advance(absl::Milliseconds(100)));
    EXPECT_EQ(Waiting("crash"), "CrashLoopBackOff");
    ASSERT_TRUE(Advance(backoff - absl::Milliseconds(200)));
    EXPECT_EQ(runner_.Starts("crash-c"), starts) << "not before " << backoff;
    ASSERT_TRUE(Advance(absl::Milliseconds(200)));
    EXPECT_EQ(runner_.Starts("crash-c"), ++starts) << "restarted after " << backoff;
    EXPECT_EQ(Waiting("crash"), "");
  }
  EXPECT_EQ(Restarts("crash"), starts - 1);
  // Ten minutes without trouble: the next crash is restarted at once again.
  ASSERT_TRUE(Advance(absl::Minutes(10)));
  ASSERT_TRUE(runner_.Exit("crash-c", 1));
  ASSERT_TRUE(Advance(absl::Milliseconds(100)));
  EXPECT_EQ(runner_.Starts("crash-c"), starts + 1);
  bool backoff_event = false;
  apiserver::ListRequest events;
  events.set_resource("events");
  events_.Flush();
  auto listed = event_sink_.List(events);
  ASSERT_TRUE(listed.ok());
  for (const auto& bytes : listed->items()) {
    api::Event ev;
    ev.ParseFromString(bytes);
    backoff_event |= ev.reason() == "BackOff" && ev.count() > 1;
  }
  EXPECT_TRUE(backoff_event) << "one BackOff event, counted";
}

TEST_F(PodWorkersTest, ADeletedPodGetsSigtermThenSigkillAfterItsGracePeriodThenGoes) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const api::Pod pod = Create("slow", "Always");
  ASSERT_TRUE(Settle());
  ASSERT_TRUE(Settle());
  ASSERT_EQ(runner_.Running("slow-c"), 1);
  const std::string sandbox = dir_.Sub("node/pods/" + pod.metadata().uid());
  ASSERT_TRUE(std::filesystem::exists(sandbox));
  runner_.IgnoreSigterm(true);
  ASSERT_TRUE(Delete("slow").ok());  // 30 s of grace, from the pod's spec
  ASSERT_TRUE(Settle());
  EXPECT_EQ(runner_.Signals("slow-c"), std::vector<int>{SIGTERM});
  ASSERT_TRUE(Advance(absl::Seconds(29)));
  EXPECT_EQ(runner_.Running("slow-c"), 1) << "it has its grace period";
  EXPECT_TRUE(Get("slow").metadata().deletion_timestamp().size() > 0);
  ASSERT_TRUE(Advance(absl::Seconds(1)));
  ASSERT_TRUE(Advance(absl::Milliseconds(100)));
  EXPECT_EQ(runner_.Running("slow-c"), 0);
  EXPECT_EQ(runner_.Signals("slow-c").back(), SIGKILL);
  EXPECT_EQ(fake_.Get<api::Pod>("pods", "default", "slow").status().code(),
            absl::StatusCode::kNotFound)
      << "the node removes the object once its containers have stopped";
  EXPECT_FALSE(std::filesystem::exists(sandbox));
  EXPECT_EQ(runner_.Starts("slow-c"), 1) << "never restarted while terminating";
}

TEST_F(PodWorkersTest, APodThatStopsOnSigtermGoesWithoutWaitingForItsGrace) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Create("quick", "Always");
  ASSERT_TRUE(Settle());
  ASSERT_TRUE(Settle());
  ASSERT_TRUE(Delete("quick").ok());
  ASSERT_TRUE(Settle());
  ASSERT_TRUE(Advance(absl::Milliseconds(100)));
  // SIGTERM ended it (the SIGKILL after is for what its first process leaves in its group).
  EXPECT_EQ(runner_.Signals("quick-c").front(), SIGTERM);
  EXPECT_EQ(fake_.Get<api::Pod>("pods", "default", "quick").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(PodWorkersTest, WhatAnEarlierAgentLeftRunningIsAdoptedNotStartedAgain) {
  api::Pod pod = Create("kept", "Always");
  // The pod's status as the earlier agent left it: restarted 3 times, running.
  api::Pod status = pod;
  auto* cs = status.mutable_status()->add_container_statuses();
  cs->set_name("kept-c");
  cs->set_restart_count(3);
  status.mutable_status()->set_phase("Running");
  ASSERT_TRUE(fake_.Update("pods", "default", status, "status").ok());
  const std::string logs = dir_.Sub("node/pods/" + pod.metadata().uid() + "/logs/kept-c");
  runner_.Preexisting(logs + "/3.pid", logs + "/3.exit");
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_TRUE(Settle());
  EXPECT_EQ(runner_.Starts("kept-c"), 1) << "the one already running";
  EXPECT_EQ(runner_.Running("kept-c"), 1);
  EXPECT_EQ(Restarts("kept"), 3);
  ASSERT_TRUE(runner_.Exit("kept-c", 1));
  ASSERT_TRUE(Advance(absl::Milliseconds(100)));
  EXPECT_EQ(runner_.Starts("kept-c"), 2);
  EXPECT_EQ(Restarts("kept"), 4) << "counting on from where it was";
}

TEST_F(PodWorkersTest, AMissingImageIsErrImagePullThenImagePullBackOff) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Create("nope", "Always", remote_.host() + "/no/such:image");
  ASSERT_TRUE(Settle());
  ASSERT_TRUE(Settle());
  EXPECT_EQ(Waiting("nope"), "ErrImagePull");
  EXPECT_EQ(runner_.Starts("nope-c"), 0);
  ASSERT_TRUE(Advance(absl::Seconds(1)));
  EXPECT_EQ(Waiting("nope"), "ImagePullBackOff");
  // The image appears in the registry: pulled at the end of the back-off.
  remote_.AddImage("no/such", "image");
  ASSERT_TRUE(Advance(absl::Seconds(10)));
  EXPECT_EQ(runner_.Running("nope-c"), 1);
}

TEST_F(PodWorkersTest, ANetworkDiskCannotBeMountedSoThePodWaitsInContainerCreating) {
  ASSERT_NO_FATAL_FAILURE(Start());
  api::Pod pod;
  pod.mutable_metadata()->set_name("disk");
  pod.mutable_spec()->set_node_name("node01");
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("disk-c");
  c->set_image("busybox");
  auto* v = pod.mutable_spec()->add_volumes();
  v->set_name("data");
  v->mutable_gce_persistent_disk()->set_pd_name("pd-1");
  ASSERT_TRUE(fake_.Create("pods", "default", pod).ok());
  ASSERT_TRUE(Settle());
  ASSERT_TRUE(Advance(absl::Seconds(30)));
  EXPECT_EQ(runner_.Starts("disk-c"), 0);
  EXPECT_EQ(Waiting("disk"), "ContainerCreating");
  EXPECT_EQ(Get("disk").status().container_statuses(0).state().waiting().message(),
            "Unable to attach or mount volumes: unmounted volumes=[data]: mkube-agent cannot "
            "attach gcePersistentDisk volumes");
  EXPECT_EQ(Get("disk").status().phase(), "Pending");
  ASSERT_TRUE(Delete("disk").ok());
  ASSERT_TRUE(Advance(absl::Seconds(1)));
  EXPECT_TRUE(Eventually([&] { return !fake_.Get<api::Pod>("pods", "default", "disk").ok(); }));
}

TEST_F(PodWorkersTest, WhatDeletedPodsLeftIsStoppedOnceThePodCacheHasSynced) {
  const api::Pod live = Create("live", "Always");
  const std::string gone = dir_.Sub("node/pods/gone-uid");
  runner_.Preexisting(gone + "/logs/old-c/0.pid", gone + "/logs/old-c/0.exit");
  std::filesystem::create_directories(gone + "/logs/old-c");
  std::ofstream(gone + "/logs/old-c/0.pid") << "recorded";
  // The first list fails: with an unsynced cache every pod would look deleted.
  fake_.FailNext("list", "pods", absl::UnavailableError("apiserver down"));
  ASSERT_NO_FATAL_FAILURE(Start(/*wait=*/false));
  ASSERT_TRUE(clock_.WaitForWaiters(1)) << "the informer backs off";
  workers_->SyncReady();
  EXPECT_EQ(runner_.Running("old-c"), 1);
  EXPECT_TRUE(std::filesystem::exists(gone));
  clock_.Advance(absl::Seconds(4));
  ASSERT_TRUE(pods_->WaitForCacheSync(std::chrono::seconds(10)));
  ASSERT_TRUE(Settle());
  EXPECT_EQ(runner_.Running("old-c"), 0);
  EXPECT_EQ(runner_.Signals("old-c"), std::vector<int>{SIGKILL});
  EXPECT_FALSE(std::filesystem::exists(gone));
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("node/pods/" + live.metadata().uid())));
  EXPECT_EQ(runner_.Running("live-c"), 1);
}

TEST_F(PodWorkersTest, TheLoopSyncsOnlyTheKeysThatAreDue) {
  ASSERT_NO_FATAL_FAILURE(Start());
  for (const char* name : {"a", "b", "c"}) Create(name, "Always");
  ASSERT_TRUE(Settle());
  ASSERT_TRUE(Settle());
  ASSERT_EQ(runner_.Running("a-c") + runner_.Running("b-c") + runner_.Running("c-c"), 3);
  EXPECT_EQ(workers_->SyncReady(), 0) << "nothing is looked at until something is due";
  clock_.Advance(absl::Milliseconds(100));
  EXPECT_EQ(workers_->SyncReady(), 3) << "each running pod, once, for exits";
  Create("d", "Never");
  ASSERT_TRUE(Settle());
  clock_.Advance(absl::Milliseconds(50));
  EXPECT_EQ(workers_->SyncReady(), 0);
}

}  // namespace
}  // namespace mkube::agent::pods
