#include "agent/runtime/process.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/runtime/cri_log.h"
#include "agent/server/agent_service.h"
#include "tests/util/eventually.h"
#include "tests/util/process.h"

namespace mkube::agent::runtime {
namespace {

using testing::Eventually;

const std::vector<std::string> kEnv = {"PATH=/usr/bin:/bin", "WHO=test"};

std::string Monitor() { return testing::BinDir() + "/mkube-monitor"; }

// Starts argv under the monitor in dir, with its record, exit record and log there.
absl::StatusOr<ProcessRecord> Start(const testing::TempDir& dir, std::vector<std::string> argv) {
  ProcessSpec spec{std::move(argv), kEnv, dir.path(), dir.Sub("0.log")};
  return StartMonitored(Monitor(), spec, dir.Sub("0.pid"), dir.Sub("0.exit"));
}

TEST(ResolveExecutable, ThroughThePathOfTheEnvironment) {
  EXPECT_EQ(*ResolveExecutable("sh", kEnv), "/usr/bin/sh");
  EXPECT_EQ(*ResolveExecutable("/bin/sh", kEnv), "/bin/sh");
  auto missing = ResolveExecutable("no-such-program", kEnv);
  EXPECT_EQ(missing.status().message(), "exec: \"no-such-program\": executable file not found in $PATH");
  EXPECT_FALSE(ResolveExecutable("/no/such/file", kEnv).ok());
}

TEST(StartMonitored, RunsTheCommandAndRecordsHowItEnded) {
  testing::TempDir dir;
  auto r = Start(dir, {"sh", "-c", "echo out $WHO; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->pid, 0);
  EXPECT_GT(r->monitor, 0);
  auto rec = ReadRecord(dir.Sub("0.pid"));
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->pid, r->pid);
  EXPECT_EQ(rec->env, kEnv);
  EXPECT_EQ(rec->dir, dir.path());
  ASSERT_TRUE(Eventually([&] { return ReadExitRecord(dir.Sub("0.exit")).has_value(); }));
  EXPECT_EQ(ReadExitRecord(dir.Sub("0.exit"))->exit_code, 3);
  // The log holds entries, one a line, each with its stream.
  const std::string log = testing::ReadFile(dir.Sub("0.log"));
  crilog::Decoder decoder({});
  EXPECT_EQ(decoder.Feed(log), "out test\nerr\n");
  EXPECT_THAT(log, ::testing::MatchesRegex("[0-9T:.-]+Z stdout F out test\n[0-9T:.-]+Z stderr F err\n"));
  EXPECT_FALSE(Alive(*rec));
  ReapMonitor(r->monitor);
}

TEST(StartMonitored, ProcessesLeftHoldingTheOutputDoNotDelayTheEnd) {
  testing::TempDir dir;
  auto r = Start(dir, {"sh", "-c", "sleep 100 & echo $! > child; echo bye"});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(Eventually([&] { return ReadExitRecord(dir.Sub("0.exit")).has_value(); }));
  EXPECT_EQ(ReadExitRecord(dir.Sub("0.exit"))->exit_code, 0);
  crilog::Decoder decoder({});
  EXPECT_EQ(decoder.Feed(testing::ReadFile(dir.Sub("0.log"))), "bye\n");
  kill(std::stoi(testing::ReadFile(dir.Sub("child"))), SIGKILL);
  ReapMonitor(r->monitor);
}

TEST(StartMonitored, TheWholeGroupIsSignalledAndTheSignalRecorded) {
  testing::TempDir dir;
  auto r = Start(dir, {"sh", "-c", "sleep 100 & echo $! > child; wait"});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(Eventually([&] { return !testing::ReadFile(dir.Sub("child")).empty(); }));
  EXPECT_TRUE(Alive(*r));
  const pid_t child = std::stoi(testing::ReadFile(dir.Sub("child")));
  SignalGroup(r->pid, SIGKILL);
  ASSERT_TRUE(Eventually([&] { return ReadExitRecord(dir.Sub("0.exit")).has_value(); }));
  auto exit = ReadExitRecord(dir.Sub("0.exit"));
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(exit->exit_code, 128 + SIGKILL);
  EXPECT_TRUE(Eventually([&] { return kill(child, 0) != 0; }));
  ReapMonitor(r->monitor);
}

TEST(StartMonitored, ACommandThatCannotRunIsAnErrorBeforeAnythingStarts) {
  testing::TempDir dir;
  EXPECT_EQ(Start(dir, {"no-such-program"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("0.pid")));
  EXPECT_FALSE(Start(dir, {}).ok());
}

TEST(TailOffset, WhereTheLastLinesStart) {
  testing::TempDir dir;
  struct Case {
    std::string text;
    int64_t lines;
    std::string tail;
  } cases[] = {
      {"", 3, ""},
      {"a\nb\nc\n", 1, "c\n"},
      {"a\nb\nc\n", 2, "b\nc\n"},
      {"a\nb\nc\n", 5, "a\nb\nc\n"},
      {"a\nb\nc\n", 0, ""},
      {"a\nb\nc", 1, "c"},  // a last line without its newline
      {"a\nb\nc", 2, "b\nc"},
      {std::string(10000, 'x') + "\n" + std::string(9000, 'y') + "\n", 1, std::string(9000, 'y') + "\n"},
  };
  for (const auto& c : cases) {
    const std::string path = dir.Sub("log");
    std::ofstream(path, std::ios::trunc) << c.text;
    const int fd = open(path.c_str(), O_RDONLY);
    const int64_t off = server::TailOffset(fd, c.lines);
    close(fd);
    EXPECT_EQ(c.text.substr(static_cast<size_t>(off)), c.tail) << c.text.substr(0, 20) << " / " << c.lines;
  }
}

}  // namespace
}  // namespace mkube::agent::runtime
