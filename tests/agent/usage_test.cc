// The agent's CPU and memory sampling, over a folder laid out like /proc and a fake clock.
#include "agent/node/usage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "client/testing/fake_clock.h"
#include "fmt/format.h"

namespace mkube::agent::node {
namespace {

// Field 3 on: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
// stime cutime cstime priority nice threads itrealvalue starttime vsize rss ...
std::string StatLine(pid_t pid, const std::string& comm, pid_t pgrp, int64_t utime, int64_t stime,
                     int64_t cutime, int64_t rss_pages) {
  return fmt::format(
      "{} ({}) S 1 {} {} 0 -1 4194560 10 0 0 0 {} {} {} 0 20 0 1 0 100 1000 {} "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
      pid, comm, pgrp, pgrp, utime, stime, cutime, rss_pages);
}

TEST(ProcStatTest, FieldsAfterTheCommandWhateverItHolds) {
  auto s = ParseProcStat(StatLine(42, "odd ) name (x", 40, 7, 3, 5, 250));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pgrp, 40);
  EXPECT_EQ(s->utime, 7);
  EXPECT_EQ(s->stime, 3);
  EXPECT_EQ(s->cutime, 5);
  EXPECT_EQ(s->cstime, 0);
  EXPECT_EQ(s->rss_pages, 250);
  EXPECT_FALSE(ParseProcStat("42 (cut short) S 1 2").has_value());
  EXPECT_FALSE(ParseProcStat("no parentheses").has_value());
}

TEST(ProcStatTest, ReadsThisVeryProcess) {
  auto u = ProcReader().Process(getpid());
  ASSERT_TRUE(u.has_value());
  EXPECT_GT(u->memory_bytes, 0);
  auto groups = ProcReader().Groups({getpgrp()});
  ASSERT_TRUE(groups.contains(getpgrp()));
  EXPECT_GE(groups[getpgrp()].memory_bytes, u->memory_bytes);
}

class FakeProc {
 public:
  FakeProc()
      : root_(std::filesystem::temp_directory_path() /
              fmt::format("usage_test_{}_{}", getpid(), counter_++)) {
    std::filesystem::create_directories(root_);
  }
  ~FakeProc() { std::filesystem::remove_all(root_); }
  void Set(pid_t pid, pid_t pgrp, int64_t ticks, int64_t rss_pages) {
    std::filesystem::create_directories(root_ / std::to_string(pid));
    std::ofstream(root_ / std::to_string(pid) / "stat")
        << StatLine(pid, "p", pgrp, ticks, 0, 0, rss_pages);
  }
  // With `children` ticks of waited-for children (cutime).
  void SetWithChildren(pid_t pid, int64_t ticks, int64_t children) {
    std::filesystem::create_directories(root_ / std::to_string(pid));
    std::ofstream(root_ / std::to_string(pid) / "stat")
        << StatLine(pid, "p", pid, ticks, 0, children, 1);
  }
  void Remove(pid_t pid) { std::filesystem::remove_all(root_ / std::to_string(pid)); }
  std::string root() const { return root_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path root_;
};

TEST(ProcReaderTest, SumsEachGroupsProcesses) {
  FakeProc proc;
  proc.Set(100, 100, 10, 1);
  proc.Set(101, 100, 5, 2);  // a child in the same group
  proc.Set(200, 200, 7, 3);
  proc.Set(300, 300, 9, 4);  // not asked for
  const ProcReader reader(proc.root());
  const int64_t tick = 1'000'000'000 / sysconf(_SC_CLK_TCK);
  const int64_t page = sysconf(_SC_PAGESIZE);
  auto g = reader.Groups({100, 200, 400});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[100].cpu_ns, 15 * tick);
  EXPECT_EQ(g[100].memory_bytes, 3 * page);
  EXPECT_EQ(g[200].cpu_ns, 7 * tick);
  EXPECT_FALSE(g.contains(400));
}

TEST(ProcReaderTest, AProcessAloneLeavesOutTheChildrenItWaitedFor) {
  // The agent's waited-for children are container monitors: their containers' time is
  // counted with the containers, and must not come back as the agent's.
  FakeProc proc;
  proc.SetWithChildren(7, 20, 5000);
  const int64_t tick = 1'000'000'000 / sysconf(_SC_CLK_TCK);
  EXPECT_EQ(ProcReader(proc.root()).Process(7)->cpu_ns, 20 * tick);
  // A container's group keeps them: its own children's time is its own.
  EXPECT_EQ(ProcReader(proc.root()).Groups({7})[7].cpu_ns, 5020 * tick);
}

class SamplerTest : public ::testing::Test {
 protected:
  SamplerTest()
      : tick_(1'000'000'000 / sysconf(_SC_CLK_TCK)),
        sampler_([this] { return running_; }, ProcReader(proc_.root()), &clock_, 1) {}

  FakeProc proc_;
  client::testing::FakeClock clock_;
  std::vector<RunningContainer> running_;
  const int64_t tick_;
  UsageSampler sampler_;
};

TEST_F(SamplerTest, RatesOverTheWindowBetweenTheLastTwoSamples) {
  proc_.Set(1, 1, 100, 10);  // the agent
  proc_.Set(50, 50, 1000, 100);
  running_ = {{"default", "web", "uid-1", "c", 50}};
  EXPECT_FALSE(sampler_.Summary().has_node()) << "one sample gives no rate";
  sampler_.Sample();
  EXPECT_FALSE(sampler_.Summary().has_node());

  clock_.Advance(absl::Seconds(2));
  proc_.Set(1, 1, 100 + 10, 10);
  proc_.Set(50, 50, 1000 + 100, 200);  // 100 ticks in 2 s
  sampler_.Sample();
  auto s = sampler_.Summary();
  ASSERT_TRUE(s.has_node());
  EXPECT_EQ(s.node().window(), "2s");
  const int64_t page = sysconf(_SC_PAGESIZE);
  EXPECT_EQ(s.node().usage().at("cpu"), Nanocores(110 * tick_ / 2));
  EXPECT_EQ(s.node().usage().at("memory"), Kibibytes(210 * page));
  ASSERT_EQ(s.pods_size(), 1);
  EXPECT_EQ(s.pods(0).metadata().name(), "web");
  EXPECT_EQ(s.pods(0).metadata().uid(), "uid-1");
  ASSERT_EQ(s.pods(0).containers_size(), 1);
  EXPECT_EQ(s.pods(0).containers(0).usage().at("cpu"), Nanocores(100 * tick_ / 2));
  EXPECT_EQ(s.pods(0).containers(0).usage().at("memory"), Kibibytes(200 * page));
}

TEST_F(SamplerTest, NewContainersWaitForASecondSampleAndEndedOnesKeepTheNodesTotal) {
  proc_.Set(1, 1, 0, 1);
  proc_.Set(50, 50, 400, 1);
  running_ = {{"default", "old", "uid-1", "c", 50}};
  sampler_.Sample();
  clock_.Advance(absl::Seconds(1));
  // "old" ended (its 400 ticks stay counted); "new" started with 30 ticks already used.
  proc_.Remove(50);
  proc_.Set(60, 60, 30, 1);
  running_ = {{"default", "new", "uid-2", "c", 60}};
  sampler_.Sample();
  auto s = sampler_.Summary();
  EXPECT_EQ(s.pods_size(), 0) << "measured once: no rate yet";
  EXPECT_EQ(s.node().usage().at("cpu"), Nanocores(30 * tick_));

  clock_.Advance(absl::Seconds(1));
  proc_.Set(60, 60, 40, 1);
  sampler_.Sample();
  s = sampler_.Summary();
  ASSERT_EQ(s.pods_size(), 1);
  EXPECT_EQ(s.pods(0).metadata().name(), "new");
  EXPECT_EQ(s.node().usage().at("cpu"), Nanocores(10 * tick_));
}

TEST_F(SamplerTest, ARestartedContainerIsANewInstance) {
  proc_.Set(50, 50, 500, 1);
  running_ = {{"default", "web", "uid-1", "c", 50}};
  sampler_.Sample();
  clock_.Advance(absl::Seconds(1));
  proc_.Remove(50);
  proc_.Set(51, 51, 5, 1);  // the same container, restarted: a new process group
  running_ = {{"default", "web", "uid-1", "c", 51}};
  sampler_.Sample();
  // No rate from the old instance's 500 ticks to the new one's 5.
  EXPECT_EQ(sampler_.Summary().pods_size(), 0);
}

}  // namespace
}  // namespace mkube::agent::node
