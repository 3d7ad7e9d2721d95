#include "store/lease/lessor.h"

#include <gtest/gtest.h>

#include <future>

#include "tests/store/store_fixture.h"

namespace mkube::store::lease {
namespace {

class FakeClock : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override { return now; }
  std::chrono::steady_clock::time_point now = std::chrono::steady_clock::time_point() +
                                              std::chrono::hours(1);
};

class RecordingListener : public mvcc::CommitListener {
 public:
  void OnCommit(int64_t revision, const mvcc::EventList& events) override {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : events) seen.push_back(e);
  }
  std::mutex mu;
  std::vector<mvccpb::Event> seen;
};

class LessorTest : public mvcc::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    Attach();
  }
  void Attach() {
    lessor_ = std::make_unique<Lessor>(store_.get(), &clock_);
    ASSERT_TRUE(lessor_->Recover().ok());
    store_->SetLeaseView(lessor_.get());
    store_->AddCommitListener(lessor_.get());
    store_->AddCommitListener(&listener_);
  }
  absl::StatusOr<LeaseInfo> Grant(int64_t id, int64_t ttl) {
    std::promise<absl::StatusOr<LeaseInfo>> p;
    auto f = p.get_future();
    lessor_->Grant(id, ttl, [&p](absl::StatusOr<LeaseInfo> r) { p.set_value(std::move(r)); });
    return f.get();
  }
  absl::Status Revoke(int64_t id) {
    std::promise<absl::Status> p;
    auto f = p.get_future();
    lessor_->Revoke(id, [&p](absl::Status st) { p.set_value(st); });
    return f.get();
  }
  // Waits until the writer has applied everything queued so far.
  void Barrier() { ASSERT_TRUE(Put("barrier", "x").ok()); }

  FakeClock clock_;
  RecordingListener listener_;
  std::unique_ptr<Lessor> lessor_;
};

TEST_F(LessorTest, GrantAttachAndExpire) {
  auto lease = Grant(0, 10);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_GT(lease->id, 0);
  EXPECT_EQ(lease->granted_ttl, 10);
  ASSERT_TRUE(Put("a", "1", lease->id).ok());
  ASSERT_TRUE(Put("b", "2", lease->id).ok());
  ASSERT_TRUE(Put("c", "3").ok());
  auto ttl = lessor_->TimeToLive(lease->id, true);
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(ttl->keys, (std::vector<std::string>{"a", "b"}));

  clock_.now += std::chrono::seconds(9);
  lessor_->ExpireDue();
  EXPECT_TRUE(lessor_->LeaseExists(lease->id));
  EXPECT_EQ(lessor_->KeepAlive(lease->id), 10);  // renewed: 10 more seconds from now
  clock_.now += std::chrono::seconds(9);
  lessor_->ExpireDue();
  EXPECT_EQ(ValueAt("a"), "1");

  const int64_t before = store_->Revision();
  clock_.now += std::chrono::seconds(2);
  lessor_->ExpireDue();
  Barrier();
  EXPECT_EQ(ValueAt("a"), "<none>");
  EXPECT_EQ(ValueAt("b"), "<none>");
  EXPECT_EQ(ValueAt("c"), "3");
  EXPECT_FALSE(lessor_->TimeToLive(lease->id, false).has_value());
  EXPECT_EQ(lessor_->KeepAlive(lease->id), 0);
  // Both keys went in one revision, and watchers (listeners) saw DELETE events.
  std::lock_guard<std::mutex> lock(listener_.mu);
  int deletes = 0;
  for (const auto& e : listener_.seen) {
    if (e.type() == mvccpb::Event::DELETE) {
      ++deletes;
      EXPECT_EQ(e.kv().mod_revision(), before + 1);
    }
  }
  EXPECT_EQ(deletes, 2);
}

TEST_F(LessorTest, MinimumTtlDuplicatesAndLimits) {
  auto l = Grant(42, 1);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->id, 42);
  EXPECT_EQ(l->granted_ttl, kMinTTLSeconds);
  EXPECT_EQ(Grant(42, 5).status().message(), mvcc::kErrLeaseExists);
  EXPECT_EQ(Grant(0, kMaxTTLSeconds + 1).status().message(), mvcc::kErrLeaseTTLTooLarge);
  EXPECT_EQ(Revoke(999).message(), mvcc::kErrLeaseNotFound);
  ASSERT_TRUE(Revoke(42).ok());
  EXPECT_FALSE(lessor_->LeaseExists(42));
  EXPECT_EQ(Put("k", "v", 42).status().message(), mvcc::kErrLeaseNotFound);
}

TEST_F(LessorTest, LeasesAndTheirKeysSurviveRestart) {
  auto l = Grant(7, 30);
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(Put("k1", "v", 7).ok());
  ASSERT_TRUE(Put("k2", "v", 7).ok());
  ASSERT_TRUE(Put("k2", "v").ok());  // k2 leaves the lease
  lessor_.reset();
  Open();
  Attach();
  auto ttl = lessor_->TimeToLive(7, true);
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(ttl->granted_ttl, 30);
  EXPECT_EQ(ttl->remaining_ttl, 30);
  EXPECT_EQ(ttl->keys, std::vector<std::string>{"k1"});
  ASSERT_TRUE(Revoke(7).ok());
  EXPECT_EQ(ValueAt("k1"), "<none>");
  EXPECT_EQ(ValueAt("k2"), "v");
}

}  // namespace
}  // namespace mkube::store::lease
