// Writes that name no version never answer 409 because something else changed the object,
// through the real mkube-apiserver on the real mkube-store: patches, scales, deletes and
// evictions race status writers making hundreds of unconditional updates a second, as a
// node's agent and the controllers do. A version or uid the caller names still conflicts.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "client/client.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"
#include "tests/util/cluster.h"
#include "tests/util/eventually.h"
#include "tests/util/manifest.h"

namespace mkube::testing {
namespace {

// What came of the racing writes: conflicts are what must never be seen.
struct Tally {
  std::atomic<int> ok{0}, conflicts{0}, other{0};
  std::mutex mu;
  std::string last_error;
  void Count(const absl::Status& st) {
    if (st.ok()) {
      ++ok;
      return;
    }
    ++(st.code() == absl::StatusCode::kAborted ? conflicts : other);
    std::lock_guard<std::mutex> l(mu);
    last_error = std::string(st.message());
  }
};

class NoConflictTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = cluster_.Start(Cluster::ApiserverOnly());
    ASSERT_TRUE(st.ok()) << st;
    admin_ = Client("admin-token");
    node_ = Client("node01-token");
  }
  void TearDown() override { StopWriters(); }

  std::unique_ptr<client::GrpcClient> Client(const std::string& token) {
    client::ClientOptions o = cluster_.ClientOptionsFor(token);
    o.own_connection = true;
    return std::make_unique<client::GrpcClient>(o);
  }

  // Writes the status of `pods` (as node01) and of the Deployment and budget (as an admin)
  // without naming a version, round and round, until StopWriters.
  void StartWriters(int pods) {
    writers_.emplace_back([this, pods] {
      auto c = Client("node01-token");
      for (int n = 0; !stop_; ++n) {
        api::Pod pod;
        pod.mutable_metadata()->set_name("p" + std::to_string(n % pods));
        pod.mutable_metadata()->set_namespace_("default");
        pod.mutable_status()->set_phase("Running");
        pod.mutable_status()->set_message("status write " + std::to_string(n));
        CountWrite(c->Update("pods", "default", pod, "status").status());
      }
    });
    writers_.emplace_back([this] {
      auto c = Client("admin-token");
      for (int n = 0; !stop_; ++n) {
        if (n % 2 == 0) {
          api::Deployment d;
          d.mutable_metadata()->set_name("web");
          d.mutable_status()->set_observed_generation(n);
          d.mutable_status()->set_replicas(n % 7);
          CountWrite(c->Update("deployments", "default", d, "status").status());
        } else {
          api::PodDisruptionBudget b;
          b.mutable_metadata()->set_name("budget");
          b.mutable_status()->set_observed_generation(1);
          b.mutable_status()->set_disruptions_allowed(1000);
          b.mutable_status()->set_current_healthy(n);
          CountWrite(c->Update("poddisruptionbudgets", "default", b, "status").status());
        }
      }
    });
  }
  void CountWrite(const absl::Status& st) {
    if (st.ok()) ++status_writes_;
    // A pod deleted under the writer is gone; nothing else may fail.
    if (!st.ok() && st.code() != absl::StatusCode::kNotFound) writer_errors_.Count(st);
  }
  void StopWriters() {
    stop_ = true;
    for (auto& t : writers_) t.join();
    writers_.clear();
  }
  absl::Status Evict(const std::string& name) {
    api::Eviction e;
    e.mutable_metadata()->set_name(name);
    e.mutable_metadata()->set_namespace_("default");
    apiserver::CreateRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_name(name);
    req.set_subresource("eviction");
    req.set_object(e.SerializeAsString());
    return admin_->CreateRaw(req).status();
  }
  absl::Status Delete(const std::string& resource, const std::string& name,
                      std::optional<int64_t> grace = std::nullopt, const std::string& rv = "") {
    apiserver::DeleteRequest req;
    req.set_resource(resource);
    req.set_namespace_("default");
    req.set_name(name);
    if (grace) req.set_grace_period_seconds(*grace);
    if (!rv.empty()) req.mutable_preconditions()->set_resource_version(rv);
    return admin_->Delete(req).status();
  }

  Cluster cluster_;
  std::unique_ptr<client::GrpcClient> admin_, node_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> writers_;
  std::atomic<int> status_writes_{0};
  Tally writer_errors_;
};

constexpr char kDeployment[] = R"(
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: soscscs/myapp:v1}]}
)";

constexpr char kBudget[] = R"(
metadata: {name: budget, namespace: default}
spec: {minAvailable: 0, selector: {matchLabels: {app: web}}}
)";

TEST_F(NoConflictTest, PatchesScalesDeletesAndEvictionsRacingStatusWritersNeverConflict) {
  constexpr int kPods = 30;
  ASSERT_TRUE(
      admin_->Create("deployments", "default", FromYaml<api::Deployment>(kDeployment).value())
          .ok());
  ASSERT_TRUE(admin_
                  ->Create("poddisruptionbudgets", "default",
                           FromYaml<api::PodDisruptionBudget>(kBudget).value())
                  .ok());
  for (int i = 0; i < kPods; ++i) {
    auto pod = FromYaml<api::Pod>(
                   "metadata: {name: p" + std::to_string(i) +
                   ", namespace: default, labels: {app: web}}\n"
                   "spec: {nodeName: node01, containers: [{name: c, image: soscscs/myapp:v1}]}\n")
                   .value();
    ASSERT_TRUE(admin_->Create("pods", "default", pod).ok());
  }
  StartWriters(kPods);
  // The writers are under way before the first racing write.
  ASSERT_TRUE(Eventually([&] { return status_writes_ >= 50; }));
  const int before = status_writes_;

  Tally racing;
  for (int i = 0; i < kPods; ++i) {
    const std::string p = "p" + std::to_string(i);
    racing.Count(
        admin_
            ->Patch<api::Pod>("pods", "default", p,
                              R"({"metadata":{"labels":{"round":")" + std::to_string(i) + R"("}}})")
            .status());
    racing.Count(admin_
                     ->Patch<api::Deployment>(
                         "deployments", "default", "web",
                         R"({"metadata":{"annotations":{"round":")" + std::to_string(i) + R"("}}})")
                     .status());
    racing.Count(admin_
                     ->Patch<api::Scale>("deployments", "default", "web",
                                         R"({"spec":{"replicas":)" + std::to_string(i) + "}}",
                                         "scale")
                     .status());
    api::Scale scale;
    scale.mutable_metadata()->set_name("web");
    scale.mutable_spec()->set_replicas(i + 1);
    racing.Count(admin_->Update("deployments", "default", scale, "scale").status());
    // Half the pods are evicted (the budget's status is being written too), the others
    // deleted: first marked (they are on a node), then removed at once.
    if (i % 2 == 0) {
      racing.Count(Evict(p));
    } else {
      racing.Count(Delete("pods", p));
    }
    racing.Count(Delete("pods", p, 0));
  }
  StopWriters();

  EXPECT_EQ(racing.conflicts.load(), 0) << racing.last_error;
  EXPECT_EQ(racing.other.load(), 0) << racing.last_error;
  EXPECT_EQ(racing.ok.load(), kPods * 6);
  EXPECT_EQ(writer_errors_.conflicts.load() + writer_errors_.other.load(), 0)
      << writer_errors_.last_error;
  // The race was real: the writers kept writing all along.
  EXPECT_GE(status_writes_ - before, 3 * kPods) << "status writes during the racing writes";
  auto d = admin_->Get<api::Deployment>("deployments", "default", "web");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->spec().replicas(), kPods);
  EXPECT_EQ(d->metadata().annotations().at("round"), std::to_string(kPods - 1));
  for (int i = 0; i < kPods; ++i) {
    EXPECT_EQ(admin_->Get<api::Pod>("pods", "default", "p" + std::to_string(i)).status().code(),
              absl::StatusCode::kNotFound);
  }
  std::cout << "status writes during the race: " << status_writes_ - before << "\n";
}

TEST_F(NoConflictTest, AVersionOrUidTheCallerNamesStillConflicts) {
  auto created =
      admin_->Create("deployments", "default", FromYaml<api::Deployment>(kDeployment).value());
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string old_rv = created->metadata().resource_version();
  ASSERT_TRUE(admin_
                  ->Patch<api::Deployment>("deployments", "default", "web",
                                           R"({"metadata":{"labels":{"x":"1"}}})")
                  .ok());

  api::Deployment stale = *created;
  stale.mutable_spec()->set_replicas(5);
  EXPECT_EQ(admin_->Update("deployments", "default", stale).status().code(),
            absl::StatusCode::kAborted);
  api::Scale scale;
  scale.mutable_metadata()->set_name("web");
  scale.mutable_metadata()->set_resource_version(old_rv);
  scale.mutable_spec()->set_replicas(3);
  EXPECT_EQ(admin_->Update("deployments", "default", scale, "scale").status().code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(admin_
                ->Patch<api::Deployment>(
                    "deployments", "default", "web",
                    R"({"metadata":{"resourceVersion":")" + old_rv + R"("},"spec":{"replicas":4}})")
                .status()
                .code(),
            absl::StatusCode::kAborted);
  auto del = Delete("deployments", "web", std::nullopt, old_rv);
  EXPECT_EQ(del.code(), absl::StatusCode::kAborted);
  EXPECT_NE(del.message().find("Precondition failed: ResourceVersion"), std::string::npos) << del;
  auto d = admin_->Get<api::Deployment>("deployments", "default", "web");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->spec().replicas(), 1) << "no refused write was made";
}

}  // namespace
}  // namespace mkube::testing
