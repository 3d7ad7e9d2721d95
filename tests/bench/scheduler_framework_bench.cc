// scheduler_framework_bench: the scheduling framework and plugins alone, in process: the
// scheduler's cache and snapshot, the default profile, and pods of one workload assumed on
// the node chosen for them, one after another (as the scheduling loop does, without the
// apiserver). Prints pods placed per second and the time per placed pod. Every workload's
// pods fit the nodes it is given (at least 100 for anti-affinity, a group being 100 pods): a
// pod that found no node is an error, counted in unschedulable= and in the exit status (1).
//   scheduler_framework_bench --nodes 5000 --pods 10000 --workload plain
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "scheduler/framework/config.h"
#include "scheduler/internal/cache.h"
#include "tests/bench/scheduler_workloads.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fw = mkube::scheduler::framework;

struct NoOwners : fw::Handle {
  std::vector<mkube::api::LabelSelector> OwnerSelectors(const mkube::api::Pod&) const override {
    return {};
  }
};

// Like the simulated agent's nodes: 32 cpu, 256Gi, 110 pods, ten zones.
fw::NodePtr MakeNode(int i) {
  auto node = std::make_shared<mkube::api::Node>();
  const std::string name = fmt::format("sim-{:04d}", i);
  node->mutable_metadata()->set_name(name);
  auto& labels = *node->mutable_metadata()->mutable_labels();
  labels["kubernetes.io/hostname"] = name;
  labels[mkube::bench::kZoneKey] = fmt::format("zone-{}", i % 10);
  for (auto* list : {node->mutable_status()->mutable_capacity(),
                     node->mutable_status()->mutable_allocatable()}) {
    (*list)["cpu"] = "32";
    (*list)["memory"] = "256Gi";
    (*list)["pods"] = "110";
  }
  return node;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 5000, pods = 10000;
  std::string workload = "plain";
  CLI::App app{"scheduler_framework_bench"};
  app.add_option("--nodes", nodes)->capture_default_str();
  app.add_option("--pods", pods)->capture_default_str();
  app.add_option("--workload", workload)
      ->check(CLI::IsMember(mkube::bench::WorkloadNames()))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  NoOwners handle;
  auto profiles = fw::LoadConfig("", &handle);
  if (!profiles.ok()) return 1;
  const fw::Profile& profile = (*profiles)[0];
  mkube::scheduler::Cache cache;
  for (int i = 0; i < nodes; ++i) cache.AddNode(MakeNode(i));
  fw::Snapshot snapshot;
  std::mt19937_64 rng(1);
  std::vector<double> micros;  // of the pods placed
  size_t start_index = 0;
  int unschedulable = 0;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < pods; ++i) {
    const Clock::time_point t0 = Clock::now();
    auto pod = std::make_shared<mkube::api::Pod>(mkube::bench::WorkloadPod(workload, i));
    cache.UpdateSnapshot(&snapshot);
    const fw::ScheduleResult r =
        fw::Schedule(profile, *pod, snapshot, {.start_index = start_index}, rng);
    start_index = r.next_start_index;
    if (!r.status.ok()) {
      if (++unschedulable <= 5) {
        std::string why;
        for (const std::string& reason : r.status.reasons()) why += " " + reason;
        std::fprintf(stderr, "scheduler_framework_bench: %s found no node:%s\n",
                     pod->metadata().name().c_str(), why.c_str());
      }
      continue;
    }
    pod->mutable_spec()->set_node_name(r.node);
    if (auto st = cache.AssumePod(pod); !st.ok()) {
      std::fprintf(stderr, "scheduler_framework_bench: assume %s: %s\n",
                   pod->metadata().name().c_str(), st.ToString().c_str());
      return 1;
    }
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(micros.begin(), micros.end());
  const auto at = [&](double q) {
    return micros.empty() ? 0.0 : micros[static_cast<size_t>(q * static_cast<double>(micros.size()))];
  };
  std::printf(
      "workload=%s nodes=%d pods=%d unschedulable=%d pods_per_s=%.0f p50_us=%.0f "
      "p99_us=%.0f\n",
      workload.c_str(), nodes, pods, unschedulable, static_cast<double>(micros.size()) / seconds,
      at(0.5), at(0.99));
  if (unschedulable > 0) {
    std::fprintf(stderr, "scheduler_framework_bench: %d of %d pods found no node\n",
                 unschedulable, pods);
    return 1;
  }
  return 0;
}
