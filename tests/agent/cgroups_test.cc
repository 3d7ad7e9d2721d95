#include "agent/runtime/cgroups.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace mkube::agent::runtime {
namespace {
namespace fs = std::filesystem;

api::Pod PodWith(const std::map<std::string, std::string>& requests,
                 const std::map<std::string, std::string>& limits) {
  api::Pod pod;
  pod.mutable_metadata()->set_uid("u1");
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("app");
  for (const auto& [k, v] : requests) (*c->mutable_resources()->mutable_requests())[k] = v;
  for (const auto& [k, v] : limits) (*c->mutable_resources()->mutable_limits())[k] = v;
  return pod;
}

std::map<std::string, std::string> Writes(const CgroupPlan& plan) {
  std::map<std::string, std::string> out;
  for (const auto& [file, value] : plan.writes) out[file] = value;
  return out;
}

TEST(PlanCgroups, LimitsAndRequestsBecomeCgroupFiles) {
  const CgroupRoots roots{"/m/mkube/n1", "/c/mkube/n1", "/p/mkube/n1"};
  api::Pod pod = PodWith({{"cpu", "250m"}}, {{"cpu", "500m"}, {"memory", "32Mi"}});
  const CgroupPlan plan = PlanCgroups(roots, pod, pod.spec().containers(0), 100);
  EXPECT_EQ(plan.join, (std::vector<std::string>{"/m/mkube/n1/podu1/app", "/c/mkube/n1/podu1/app",
                                                 "/p/mkube/n1/podu1"}));
  EXPECT_EQ(plan.memory, "/m/mkube/n1/podu1/app");
  auto w = Writes(plan);
  EXPECT_EQ(w["/m/mkube/n1/podu1/app/memory.limit_in_bytes"], "33554432");
  EXPECT_EQ(w["/m/mkube/n1/podu1/app/memory.swappiness"], "0");
  EXPECT_EQ(w["/c/mkube/n1/podu1/app/cpu.cfs_quota_us"], "50000");
  EXPECT_EQ(w["/c/mkube/n1/podu1/app/cpu.cfs_period_us"], "100000");
  EXPECT_EQ(w["/c/mkube/n1/podu1/app/cpu.shares"], "256");
  EXPECT_EQ(w["/p/mkube/n1/podu1/pids.max"], "100");
}

TEST(PlanCgroups, NothingAskedMeansNoLimitAndTheLeastShare) {
  const CgroupRoots roots{"/m", "/c", ""};
  api::Pod pod = PodWith({}, {});
  const CgroupPlan plan = PlanCgroups(roots, pod, pod.spec().containers(0), 0);
  auto w = Writes(plan);
  EXPECT_EQ(w["/m/podu1/app/memory.limit_in_bytes"], "-1");
  EXPECT_EQ(w["/c/podu1/app/cpu.cfs_quota_us"], "-1");
  EXPECT_EQ(w["/c/podu1/app/cpu.shares"], "2");
  EXPECT_EQ(plan.join.size(), 2u);  // no pids hierarchy here
}

TEST(DetectCgroups, UnderTheAgentsOwnCgroupInEachHierarchy) {
  const fs::path dir = fs::temp_directory_path() / ("cgroups_test." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "memory" / "outer");
  fs::create_directories(dir / "cpu");
  std::ofstream(dir / "self") << "9:name=systemd:/\n8:pids:/\n4:memory:/outer\n1:cpu,cpuacct:/\n";
  const CgroupRoots r = DetectCgroups("node01", (dir / "self").string(), dir.string());
  EXPECT_EQ(r.memory, (dir / "memory/outer/mkube/node01").string());
  EXPECT_EQ(r.cpu, (dir / "cpu/mkube/node01").string());
  EXPECT_EQ(r.pids, "");  // its hierarchy is not mounted here
  EXPECT_TRUE(fs::is_directory(r.memory));
  EXPECT_EQ(r.Describe(), "memory, cpu");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mkube::agent::runtime
