// Leader election against the fake clientset and clock: one leader at a time, a hand-over
// when the leader stops, and when it is cut off: it steps down after the renew deadline and
// the other takes over only once the lease has gone unrenewed for its duration.
#include "client/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>

#include "client/leadership.h"
#include "client/testing/fake_client.h"
#include "client/testing/fake_clock.h"
#include "proto/api/apps.pb.h"
#include "tests/util/eventually.h"

namespace mkube::client {
namespace {

using mkube::testing::Eventually;

// A candidate's own connection to the shared fake, which the test can cut.
class Link final : public ApiClient {
 public:
  explicit Link(ApiClient* to) : to_(to) {}
  void Cut() { cut_ = true; }
  void Mend() { cut_ = false; }
  int calls() const { return calls_; }

  absl::StatusOr<std::string> GetRaw(const apiserver::GetRequest& r) override {
    return Pass([&] { return to_->GetRaw(r); });
  }
  absl::StatusOr<std::string> CreateRaw(const apiserver::CreateRequest& r) override {
    return Pass([&] { return to_->CreateRaw(r); });
  }
  absl::StatusOr<std::string> UpdateRaw(const apiserver::UpdateRequest& r) override {
    return Pass([&] { return to_->UpdateRaw(r); });
  }
  absl::StatusOr<std::string> PatchRaw(const apiserver::PatchRequest& r) override {
    return Pass([&] { return to_->PatchRaw(r); });
  }
  absl::StatusOr<std::string> Delete(const apiserver::DeleteRequest& r) override {
    return Pass([&] { return to_->Delete(r); });
  }
  absl::StatusOr<apiserver::ListReply> List(const apiserver::ListRequest& r) override {
    ++calls_;
    if (cut_) return absl::UnavailableError("cut off");
    return to_->List(r);
  }
  WatchStreamPtr Watch(const apiserver::WatchRequest& r) override { return to_->Watch(r); }

 private:
  template <typename F>
  absl::StatusOr<std::string> Pass(F f) {
    ++calls_;
    if (cut_) return absl::UnavailableError("cut off");
    return f();
  }
  ApiClient* to_;
  std::atomic<bool> cut_{false};
  std::atomic<int> calls_{0};
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  LeaderElector::Config Config(const std::string& id) {
    LeaderElector::Config c;
    c.lease_name = "mkube-scheduler";
    c.identity = id;
    c.on_started_leading = [this] { ++started_; };
    return c;  // Kubernetes' defaults: 15 s lease, 10 s renew deadline, 2 s retry
  }
  // Moves time one retry period on and waits until both candidates have acted on it.
  void Step() {
    const int a = link_a_.calls(), b = link_b_.calls();
    clock_.Advance(absl::Seconds(2));
    ASSERT_TRUE(Eventually(
        [&] { return link_a_.calls() > a && link_b_.calls() > b && clock_.waiters() == 2; }));
  }
  // a first, until it leads; then b, until both wait for their next retry.
  void StartLeaderThenFollower(LeaderElector& a, LeaderElector& b) {
    a.Start();
    ASSERT_TRUE(Eventually([&] { return a.IsLeader(); }));
    b.Start();
    ASSERT_TRUE(clock_.WaitForWaiters(2));
  }
  api::Lease Lease() { return *fake_.Get<api::Lease>("leases", "kube-system", "mkube-scheduler"); }

  testing::FakeClock clock_;
  testing::FakeClient fake_{&clock_};
  Link link_a_{&fake_}, link_b_{&fake_};
  std::atomic<int> started_{0};
};

TEST_F(LeaderElectionTest, OneLeadsAndTheOtherTakesOverAtOnceWhenItStops) {
  LeaderElector a(&link_a_, Config("a"), &clock_);
  LeaderElector b(&link_b_, Config("b"), &clock_);
  ASSERT_NO_FATAL_FAILURE(StartLeaderThenFollower(a, b));
  for (int i = 0; i < 10; ++i) {
    Step();
    ASSERT_TRUE(a.IsLeader());
    ASSERT_FALSE(b.IsLeader());
  }
  EXPECT_EQ(Lease().spec().holder_identity(), "a");
  a.Stop();  // gives the lease up
  EXPECT_EQ(Lease().spec().holder_identity(), "");
  clock_.Advance(absl::Seconds(2));
  ASSERT_TRUE(Eventually([&] { return b.IsLeader(); }));
  EXPECT_EQ(Lease().spec().holder_identity(), "b");
  EXPECT_EQ(Lease().spec().lease_transitions(), 1);
  EXPECT_TRUE(Eventually([&] { return started_ == 2; })) << "each leader was told once";
}

TEST_F(LeaderElectionTest, ACutOffLeaderStepsDownBeforeTheOtherTakesOver) {
  LeaderElector a(&link_a_, Config("a"), &clock_);
  LeaderElector b(&link_b_, Config("b"), &clock_);
  ASSERT_NO_FATAL_FAILURE(StartLeaderThenFollower(a, b));
  Step();
  link_a_.Cut();
  const absl::Time cut = clock_.Now();
  absl::Time a_stopped = absl::InfiniteFuture(), b_started = absl::InfiniteFuture();
  for (int i = 0; i < 12 && b_started == absl::InfiniteFuture(); ++i) {
    Step();
    ASSERT_FALSE(a.IsLeader() && b.IsLeader()) << "two leaders at " << clock_.Now() - cut;
    if (!a.IsLeader() && a_stopped == absl::InfiniteFuture()) a_stopped = clock_.Now();
    if (b.IsLeader()) b_started = clock_.Now();
  }
  // a gives up once it has not renewed for the renew deadline (10 s); b waits until the
  // lease has gone unrenewed for its duration (15 s) as b measures it.
  EXPECT_GT(a_stopped - cut, absl::Seconds(8));
  EXPECT_LE(a_stopped - cut, absl::Seconds(12));
  EXPECT_GT(b_started - cut, absl::Seconds(14));
  EXPECT_LE(b_started - cut, absl::Seconds(18));
  EXPECT_LT(a_stopped, b_started);
  EXPECT_EQ(Lease().spec().holder_identity(), "b");
  EXPECT_EQ(Lease().spec().lease_transitions(), 1);
}

// A store or apiserver restart: the leader's tries fail for a while, less than the renew
// deadline. It keeps leading, the other never takes over, and the lease changes no hands.
TEST_F(LeaderElectionTest, ALeaderCutOffForLessThanTheRenewDeadlineKeepsLeading) {
  LeaderElector a(&link_a_, Config("a"), &clock_);
  LeaderElector b(&link_b_, Config("b"), &clock_);
  ASSERT_NO_FATAL_FAILURE(StartLeaderThenFollower(a, b));
  Step();
  link_a_.Cut();
  for (int i = 0; i < 4; ++i) {  // 8 s of failed tries
    Step();
    ASSERT_TRUE(a.IsLeader());
  }
  link_a_.Mend();
  for (int i = 0; i < 10; ++i) {
    Step();
    ASSERT_TRUE(a.IsLeader());
    ASSERT_FALSE(b.IsLeader());
  }
  EXPECT_EQ(Lease().spec().holder_identity(), "a");
  EXPECT_EQ(Lease().spec().lease_transitions(), 0);
  EXPECT_EQ(started_, 1);
}

// A leader's own client: each call waits through a reconnect but ends within a fifth of the
// renew deadline, so that a try (a read and a write) leaves room for more before it.
TEST(ElectionClientOptionsTest, CallsWaitForTheConnectionWithinAFifthOfTheRenewDeadline) {
  ClientOptions daemon;
  daemon.address = "127.0.0.1:6443";
  Leadership::Flags flags;  // renew deadline 10 s
  ClientOptions o = ElectionClientOptions(daemon, flags);
  EXPECT_EQ(o.address, daemon.address);
  EXPECT_EQ(o.timeout, std::chrono::seconds(2));
  EXPECT_TRUE(o.wait_for_ready);
  EXPECT_TRUE(o.own_connection);
  EXPECT_EQ(o.read_attempts, 1);
  flags.renew_deadline = "100ms";
  EXPECT_EQ(ElectionClientOptions(daemon, flags).timeout, std::chrono::milliseconds(100));
}

}  // namespace
}  // namespace mkube::client
