// A user's bad day: daemons of a cluster up.sh started are killed with -9, alone and
// together, while a Deployment is scaled, Jobs run and a writer creates objects; up.sh's
// supervisors start them again, with nobody restarting anything by hand. What Kubernetes
// promises must hold throughout: every acknowledged create is there, no pod is ever bound to
// two nodes, the Deployment converges, Jobs complete with exactly their completions, the
// leaders keep their leases through a store or apiserver restart, and nothing is left of a
// deleted pod or after down.sh.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "client/informer.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/batch.pb.h"
#include "proto/api/core.pb.h"
#include "tests/chaos/up_cluster.h"
#include "tests/util/eventually.h"
#include "tests/util/manifest.h"

namespace mkube::testing {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Creates Leases named chaos-<n> one after another, as fast as they are answered, and keeps
// the names of those acknowledged. Failures are expected while the apiserver or the store is
// down; what was acknowledged must be there afterwards.
class Writer {
 public:
  explicit Writer(std::unique_ptr<client::GrpcClient> c) : client_(std::move(c)) {
    thread_ = std::thread([this] {
      for (int n = 0; !stop_; ++n) {
        api::Lease lease;
        lease.mutable_metadata()->set_name(fmt::format("chaos-{}", n));
        lease.mutable_spec()->set_holder_identity("writer");
        if (client_->Create("leases", "default", lease).ok()) {
          absl::MutexLock l(&mu_);
          acked_.push_back(lease.metadata().name());
        } else {
          ++failed_;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
    });
  }
  ~Writer() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> acked() {
    absl::MutexLock l(&mu_);
    return acked_;
  }
  int failed() const { return failed_; }

 private:
  std::unique_ptr<client::GrpcClient> client_;
  std::atomic<bool> stop_{false};
  std::atomic<int> failed_{0};
  absl::Mutex mu_;
  std::vector<std::string> acked_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// Watches every pod and remembers the node each pod (by uid) was bound to: a pod seen on a
// second node is a double binding.
class BindingWatch {
 public:
  explicit BindingWatch(client::ApiClient* c) : informer_(c, "pods") {
    auto seen = [this](const client::Informer<api::Pod>::Ptr& pod) {
      const std::string& node = pod->spec().node_name();
      if (node.empty()) return;
      absl::MutexLock l(&mu_);
      auto [it, added] = node_of_.emplace(pod->metadata().uid(), node);
      if (!added && it->second != node) {
        doubles_.push_back(
            fmt::format("{} on {} and {}", pod->metadata().name(), it->second, node));
      }
    };
    informer_.AddHandlers({.on_add = seen,
                           .on_update = [seen](const auto&, const auto& p) { seen(p); },
                           .on_delete = nullptr});
    informer_.Start();
  }
  bool Synced() { return informer_.WaitForCacheSync(std::chrono::seconds(30)); }
  std::vector<std::string> doubles() {
    absl::MutexLock l(&mu_);
    return doubles_;
  }
  size_t bound() {
    absl::MutexLock l(&mu_);
    return node_of_.size();
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::string> node_of_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> doubles_ ABSL_GUARDED_BY(mu_);
  client::Informer<api::Pod> informer_;
};

constexpr char kDeployment[] = R"(
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: web, image: soscscs/myapp:v1}]
)";

std::string JobYaml(const std::string& name) {
  return fmt::format(R"(
metadata: {{name: {}, namespace: default}}
spec:
  completions: 4
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers: [{{name: work, image: busybox, command: [sh, -c, "sleep 0.5"]}}]
)",
                     name);
}

class ChaosTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UpCluster::Options o;
    o.nodes = 2;
    auto st = cluster_.Up(o);
    ASSERT_TRUE(st.ok()) << st;
    admin_ = cluster_.Client();
  }
  void TearDown() override {
    if (HasFailure()) std::cout << cluster_.Logs();
    auto st = cluster_.Down();
    EXPECT_TRUE(st.ok()) << st;
  }

  // The pods of the default namespace that match `selector` ("": all).
  absl::StatusOr<std::vector<api::Pod>> Pods(const std::string& selector) {
    apiserver::ListRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_label_selector(selector);
    auto listed = admin_->List(req);
    if (!listed.ok()) return listed.status();
    std::vector<api::Pod> pods(listed->items_size());
    for (int i = 0; i < listed->items_size(); ++i) pods[i].ParseFromString(listed->items(i));
    return pods;
  }

  // The Deployment has `replicas` pods, all Running and ready, and no others.
  std::string DeploymentGap(int replicas) {
    auto d = admin_->Get<api::Deployment>("deployments", "default", "web");
    if (!d.ok()) return d.status().ToString();
    const auto& s = d->status();
    if (s.observed_generation() < d->metadata().generation() || s.replicas() != replicas ||
        s.updated_replicas() != replicas || s.ready_replicas() != replicas ||
        s.available_replicas() != replicas) {
      return fmt::format("status replicas {} updated {} ready {} available {} (want {})",
                         s.replicas(), s.updated_replicas(), s.ready_replicas(),
                         s.available_replicas(), replicas);
    }
    auto pods = Pods("app=web");
    if (!pods.ok()) return pods.status().ToString();
    int running = 0;
    for (const auto& p : *pods) {
      if (!p.metadata().deletion_timestamp().empty()) return "a pod is still terminating";
      if (p.status().phase() == "Running") ++running;
    }
    if (static_cast<int>(pods->size()) != replicas || running != replicas) {
      return fmt::format("{} pods, {} Running (want {})", pods->size(), running, replicas);
    }
    return "";
  }

  // The Job completed with exactly its completions, each a pod that Succeeded.
  std::string JobGap(const std::string& name) {
    auto job = admin_->Get<api::Job>("jobs", "default", name);
    if (!job.ok()) return job.status().ToString();
    bool complete = false;
    for (const auto& c : job->status().conditions()) {
      complete |= c.type() == "Complete" && c.status() == "True";
    }
    if (!complete)
      return fmt::format("job {}: succeeded {}, not Complete", name, job->status().succeeded());
    auto pods = Pods("job-name=" + name);
    if (!pods.ok()) return pods.status().ToString();
    int succeeded = 0;
    for (const auto& p : *pods) succeeded += p.status().phase() == "Succeeded";
    if (job->status().succeeded() != 4 || succeeded != 4) {
      return fmt::format("job {}: status says {} succeeded, {} pods Succeeded (want 4)", name,
                         job->status().succeeded(), succeeded);
    }
    return "";
  }

  bool Scale(int replicas) {
    return admin_
        ->Patch<api::Scale>("deployments", "default", "web",
                            fmt::format(R"({{"spec":{{"replicas":{}}}}})", replicas), "scale")
        .ok();
  }

  // The leaders' Leases: holder and transitions of each.
  std::string Leases() {
    std::string out;
    for (const char* name : {"kube-scheduler", "kube-controller-manager"}) {
      auto l = admin_->Get<api::Lease>("leases", "kube-system", name);
      out += l.ok() ? fmt::format("{}: {} after {} transitions; ", name,
                                  l->spec().holder_identity(), l->spec().lease_transitions())
                    : l.status().ToString();
    }
    return out;
  }

  UpCluster cluster_;
  std::unique_ptr<client::GrpcClient> admin_;
};

std::string Describe(const absl::StatusOr<api::Lease>& l) {
  if (!l.ok()) return l.status().ToString();
  return l->spec().holder_identity() + " renewed " + l->spec().renew_time();
}

struct Round {
  std::string name;
  std::vector<std::string> kill;
};

TEST_F(ChaosTest, EveryDaemonKilledAloneAndTogetherTheClusterConverges) {
  BindingWatch bindings(admin_.get());
  ASSERT_TRUE(bindings.Synced());
  Writer writer(cluster_.Client());
  ASSERT_TRUE(
      admin_->Create("deployments", "default", FromYaml<api::Deployment>(kDeployment).value())
          .ok());
  ASSERT_TRUE(Eventually([&] { return DeploymentGap(2).empty(); }, std::chrono::seconds(60)))
      << DeploymentGap(2);

  const std::vector<Round> rounds = {
      {"store", {"store"}},
      {"apiserver", {"apiserver"}},
      {"scheduler", {"scheduler"}},
      {"controller-manager", {"controller-manager"}},
      {"agent", {"agent-node01"}},
      {"store+apiserver", {"store", "apiserver"}},
      {"all",
       {"store", "apiserver", "scheduler", "controller-manager", "agent-master01", "agent-node01",
        "agent-node02"}},
  };
  std::vector<std::pair<std::string, double>> table;
  int replicas = 2;
  for (size_t r = 0; r < rounds.size(); ++r) {
    const Round& round = rounds[r];
    SCOPED_TRACE(round.name);
    const pid_t scheduler = cluster_.Pid("scheduler");
    const pid_t cm = cluster_.Pid("controller-manager");
    const auto leases_before = Leases();
    replicas = replicas == 2 ? 5 : 2;
    ASSERT_TRUE(Scale(replicas));
    const std::string job = fmt::format("job-{}", r);
    ASSERT_TRUE(admin_->Create("jobs", "default", FromYaml<api::Job>(JobYaml(job)).value()).ok());
    const auto killed_at = Clock::now();
    std::map<std::string, pid_t> killed;
    for (const auto& d : round.kill) killed[d] = cluster_.Kill9(d);
    for (const auto& [d, pid] : killed) {
      ASSERT_TRUE(cluster_.WaitRestarted(d, pid, std::chrono::seconds(30)))
          << d << " was not started again";
    }
    std::string gap;
    const bool converged = Eventually(
        [&] {
          gap = DeploymentGap(replicas);
          if (gap.empty()) gap = JobGap(job);
          return gap.empty();
        },
        std::chrono::seconds(90));
    ASSERT_TRUE(converged) << "not converged 90 s after the kill: " << gap;
    table.emplace_back(round.name, Since(killed_at));
    const bool leaders_killed = killed.count("scheduler") || killed.count("controller-manager");
    if (!leaders_killed) {
      // A store or apiserver restart costs the leaders nothing: not even their lease.
      EXPECT_EQ(cluster_.Pid("scheduler"), scheduler) << "the scheduler exited";
      EXPECT_EQ(cluster_.Pid("controller-manager"), cm) << "the controller-manager exited";
    }
    // A leader started again takes its Lease back under its own name at once: no other
    // candidate ever held it, so it never waited out the lease of the one killed.
    EXPECT_EQ(Leases(), leases_before);
  }
  writer.Stop();

  std::cout << "time to converge after kill -9 (Deployment scaled and a Job created just "
               "before):\n";
  for (const auto& [name, seconds] : table)
    std::cout << fmt::format("  {:<20} {:6.1f} s\n", name, seconds);

  // Every acknowledged create is there.
  apiserver::ListRequest leases;
  leases.set_resource("leases");
  leases.set_namespace_("default");
  auto listed = admin_->List(leases);
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::set<std::string> present;
  for (const auto& raw : listed->items()) {
    api::Lease l;
    l.ParseFromString(raw);
    present.insert(l.metadata().name());
  }
  const auto acked = writer.acked();
  int missing = 0;
  for (const auto& name : acked) missing += !present.count(name);
  EXPECT_EQ(missing, 0) << "of " << acked.size() << " acknowledged creates";
  EXPECT_GT(acked.size(), 100u);
  std::cout << acked.size() << " creates acknowledged, " << writer.failed()
            << " refused while daemons were down\n";
  EXPECT_TRUE(bindings.doubles().empty()) << absl::StrJoin(bindings.doubles(), "; ");
  EXPECT_GT(bindings.bound(), 20u);

  // Nothing is left of deleted pods.
  auto remove = [&](const std::string& resource, const std::string& name) {
    apiserver::DeleteRequest del;
    del.set_resource(resource);
    del.set_namespace_("default");
    del.set_name(name);
    del.set_propagation_policy("Background");
    return admin_->Delete(del).status();
  };
  ASSERT_TRUE(remove("deployments", "web").ok());
  for (size_t r = 0; r < rounds.size(); ++r) {
    ASSERT_TRUE(remove("jobs", fmt::format("job-{}", r)).ok());
  }
  ASSERT_TRUE(Eventually(
      [&] {
        auto pods = Pods("");
        return pods.ok() && pods->empty();
      },
      std::chrono::seconds(60)))
      << "pods left after their owners were deleted";
  EXPECT_TRUE(Eventually([&] { return cluster_.PodProcesses().empty(); }, std::chrono::seconds(30)))
      << cluster_.PodProcesses().size() << " processes of deleted pods left";
}

// Store, apiserver, and both: killed and started again 20 times each under writes, with the
// leaders renewing all along. Between restarts the test waits for both leaders to have
// renewed once (a renewal every 2 s), so every restart lands on a leader that holds its lease.
TEST_F(ChaosTest, LeadersKeepTheirLeasesThroughStoreAndApiserverRestarts) {
  constexpr int kRounds = 20;
  Writer writer(cluster_.Client());
  auto lease = [&](const std::string& name) {
    return cluster_.Client()->Get<api::Lease>("leases", "kube-system", name);
  };
  auto sched0 = lease("kube-scheduler");
  auto cm0 = lease("kube-controller-manager");
  ASSERT_TRUE(sched0.ok() && cm0.ok());
  const pid_t scheduler = cluster_.Pid("scheduler");
  const pid_t cm = cluster_.Pid("controller-manager");
  double worst = 0;
  for (const std::vector<std::string>& kill :
       std::vector<std::vector<std::string>>{{"apiserver"}, {"store"}, {"store", "apiserver"}}) {
    for (int i = 0; i < kRounds; ++i) {
      const std::string what = absl::StrJoin(kill, "+");
      SCOPED_TRACE(fmt::format("{} restart {}", what, i + 1));
      auto before_s = lease("kube-scheduler");
      auto before_c = lease("kube-controller-manager");
      ASSERT_TRUE(before_s.ok() && before_c.ok());
      const auto t0 = Clock::now();
      std::map<std::string, pid_t> killed;
      for (const auto& d : kill) killed[d] = cluster_.Kill9(d);
      for (const auto& [d, pid] : killed) {
        ASSERT_TRUE(cluster_.WaitRestarted(d, pid, std::chrono::seconds(30)));
      }
      // Both leaders renew again, still holding their leases.
      auto renewed = [&](const std::string& name, const api::Lease& before) {
        auto now = lease(name);
        return now.ok() && now->spec().holder_identity() == before.spec().holder_identity() &&
               now->spec().renew_time() != before.spec().renew_time();
      };
      ASSERT_TRUE(Eventually(
          [&] {
            return renewed("kube-scheduler", *before_s) &&
                   renewed("kube-controller-manager", *before_c);
          },
          std::chrono::seconds(20)))
          << "the leases were not renewed after the restart; before: "
          << before_s->spec().renew_time() << " / " << before_c->spec().renew_time()
          << "; now: " << Describe(lease("kube-scheduler")) << " / "
          << Describe(lease("kube-controller-manager"));
      worst = std::max(worst, Since(t0));
      ASSERT_EQ(cluster_.Pid("scheduler"), scheduler) << "the scheduler exited";
      ASSERT_EQ(cluster_.Pid("controller-manager"), cm) << "the controller-manager exited";
    }
  }
  writer.Stop();
  auto sched1 = lease("kube-scheduler");
  auto cm1 = lease("kube-controller-manager");
  ASSERT_TRUE(sched1.ok() && cm1.ok());
  EXPECT_EQ(sched1->spec().holder_identity(), sched0->spec().holder_identity());
  EXPECT_EQ(sched1->spec().lease_transitions(), sched0->spec().lease_transitions());
  EXPECT_EQ(cm1->spec().holder_identity(), cm0->spec().holder_identity());
  EXPECT_EQ(cm1->spec().lease_transitions(), cm0->spec().lease_transitions());
  EXPECT_EQ(cluster_.Log("scheduler").find("lost the lease"), std::string::npos);
  EXPECT_EQ(cluster_.Log("controller-manager").find("lost the lease"), std::string::npos);
  std::cout << fmt::format("{} restarts; the longest from kill to both leases renewed: {:.1f} s\n",
                           3 * kRounds, worst);
  const auto acked = writer.acked();
  EXPECT_GT(acked.size(), 0u);
}

}  // namespace
}  // namespace mkube::testing

