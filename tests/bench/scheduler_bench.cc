// scheduler_bench: creates pods of one workload as fast as a few writers go and watches them
// being bound by mkube-scheduler; prints the pods bound per second (from the first create to
// the last binding), create-to-bound latency per pod, and the scheduler's CPU per pod and
// RSS (from /proc of --scheduler-pid). Only pods created and bound count; a create refused
// (errors=) or a pod not bound within --timeout (600 s) makes the exit status 1.
//   scheduler_bench --apiserver HOST:PORT --token T --workload plain|node-affinity|
//                   anti-affinity|pod-affinity|spread [--pods 10000] [--scheduler-pid PID]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/client.h"
#include "client/informer.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"
#include "tests/bench/bench_util.h"
#include "tests/bench/scheduler_workloads.h"

namespace {

using mkube::bench::CpuSeconds;
using mkube::bench::RssMib;

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string address, token, workload = "plain";
  int pods = 10000, writers = 8, scheduler_pid = 0;
  CLI::App app{"scheduler_bench"};
  app.add_option("--apiserver", address)->required();
  app.add_option("--token", token)->required();
  app.add_option("--workload", workload)
      ->check(CLI::IsMember(mkube::bench::WorkloadNames()))
      ->capture_default_str();
  app.add_option("--pods", pods)->capture_default_str();
  app.add_option("--writers", writers, "Threads creating pods")->capture_default_str();
  app.add_option("--scheduler-pid", scheduler_pid, "Read the scheduler's CPU and RSS here");
  int timeout_s = 600;
  app.add_option("--timeout", timeout_s, "Seconds the pods may take to be bound")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  mkube::client::ClientOptions o;
  o.address = address;
  o.token = token;
  mkube::client::GrpcClient client(o);

  if (!mkube::bench::MakeBenchNamespace(&client, "scheduler_bench")) return 1;
  // Index i of pod "bench-<i>": when its create was sent, when it was seen bound.
  std::vector<Clock::time_point> sent(pods), bound(pods);
  std::vector<std::atomic<bool>> seen(pods);
  std::atomic<int> bound_count{0};
  auto on_pod = [&](const mkube::client::Informer<mkube::api::Pod>::Ptr& pod) {
    if (pod->spec().node_name().empty()) return;
    const std::string& name = pod->metadata().name();
    if (name.rfind("bench-", 0) != 0) return;
    const int i = std::stoi(name.substr(6));
    if (i < 0 || i >= pods || seen[i].exchange(true)) return;
    bound[i] = Clock::now();
    bound_count.fetch_add(1);
  };
  mkube::client::Informer<mkube::api::Pod> informer(&client, "pods", {.ns = "bench"});
  informer.AddHandlers({on_pod, [&](const auto&, const auto& p) { on_pod(p); }, nullptr});
  informer.Start();
  if (!informer.WaitForCacheSync(std::chrono::seconds(30))) {
    std::fprintf(stderr, "scheduler_bench: the pod cache did not sync\n");
    return 1;
  }

  const double cpu_before = scheduler_pid ? CpuSeconds(scheduler_pid) : 0;
  const Clock::time_point start = Clock::now();
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < pods;) {
        mkube::api::Pod pod = mkube::bench::WorkloadPod(workload, i);
        sent[i] = Clock::now();
        auto r = client.Create<mkube::api::Pod>("pods", "bench", pod);
        if (!r.ok()) {
          if (failed.fetch_add(1) < 5) {
            std::fprintf(stderr, "create bench-%d: %s\n", i, r.status().ToString().c_str());
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const Clock::time_point created = Clock::now();
  const int want = pods - failed.load();
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(timeout_s);
  while (bound_count.load() < want && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double cpu_after = scheduler_pid ? CpuSeconds(scheduler_pid) : 0;
  informer.Stop();

  Clock::time_point last = start;
  std::vector<double> latencies;
  for (int i = 0; i < pods; ++i) {
    if (!seen[i]) continue;
    last = std::max(last, bound[i]);
    latencies.push_back(std::chrono::duration<double, std::milli>(bound[i] - sent[i]).count());
  }
  const int n = static_cast<int>(latencies.size());
  std::printf(
      "workload=%s pods=%d errors=%d bound=%d created_per_s=%.0f bound_per_s=%.0f p50_ms=%.1f "
      "p99_ms=%.1f sched_cpu_ms_per_pod=%.3f sched_rss_mib=%lld\n",
      workload.c_str(), pods, failed.load(), n, want / Seconds(start, created),
      n / Seconds(start, last),
      Percentile(latencies, 0.5), Percentile(latencies, 0.99),
      n ? (cpu_after - cpu_before) * 1000 / n : 0.0,
      static_cast<long long>(scheduler_pid ? RssMib(scheduler_pid) : 0));
  if (n != pods) {
    std::fprintf(stderr, "scheduler_bench: %d of %d pods bound (%d creates refused)\n", n, pods,
                 failed.load());
    return 1;
  }
  return 0;
}
