// controller_bench: one Deployment scaled from 0 to --replicas through mkube-controller-manager
// and mkube-scheduler on simulated nodes, then rolled to a new image. Prints the seconds from
// the scale until every pod exists, is bound and is Running; then from the image change until
// every Running pod has the new image and no old one is left; and the controller-manager's CPU
// (from /proc of --cm-pid) and RSS at the end.
//   controller_bench --apiserver HOST:PORT --token T [--replicas 10000] [--cm-pid PID]
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/client.h"
#include "client/informer.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"
#include "tests/bench/bench_util.h"

namespace {

using mkube::bench::CpuSeconds;
using mkube::bench::RssMib;

using Clock = std::chrono::steady_clock;
using mkube::api::Pod;

// What the pod watch has seen: live pods by name, with their image, node and phase.
class Census {
 public:
  struct Counts {
    int exist = 0, bound = 0, running = 0, running_new = 0, old = 0;
  };
  void Set(const Pod& p) {
    std::lock_guard<std::mutex> l(mu_);
    if (!p.metadata().deletion_timestamp().empty()) {
      EraseLocked(p.metadata().name());
      return;
    }
    Entry e;
    e.image = p.spec().containers_size() ? p.spec().containers(0).image() : "";
    e.bound = !p.spec().node_name().empty();
    e.running = p.status().phase() == "Running";
    auto [it, added] = pods_.try_emplace(p.metadata().name());
    if (!added) Account(it->second, -1);
    it->second = std::move(e);
    Account(it->second, +1);
  }
  void Erase(const Pod& p) {
    std::lock_guard<std::mutex> l(mu_);
    EraseLocked(p.metadata().name());
  }
  // Kept as the pods change, so that polling every few milliseconds costs nothing: a walk
  // over 10,000 pods each time took a core's tenth from the cluster being measured.
  Counts Count(const std::string& new_image) {
    std::lock_guard<std::mutex> l(mu_);
    Counts c = totals_;
    auto it = by_image_.find(new_image);
    const Counts of_new = it == by_image_.end() ? Counts{} : it->second;
    c.running_new = of_new.running;
    c.old = c.exist - of_new.exist;
    return c;
  }

 private:
  struct Entry {
    std::string image;
    bool bound = false, running = false;
  };
  void Account(const Entry& e, int sign) {
    for (Counts* c : {&totals_, &by_image_[e.image]}) {
      c->exist += sign;
      c->bound += sign * e.bound;
      c->running += sign * e.running;
    }
  }
  void EraseLocked(const std::string& name) {
    auto it = pods_.find(name);
    if (it == pods_.end()) return;
    Account(it->second, -1);
    pods_.erase(it);
  }

  std::mutex mu_;
  std::map<std::string, Entry> pods_;
  Counts totals_;
  std::map<std::string, Counts> by_image_;
};

mkube::api::Deployment BenchDeployment() {
  mkube::api::Deployment d;
  d.set_api_version("apps/v1");
  d.set_kind("Deployment");
  d.mutable_metadata()->set_name("bench");
  d.mutable_spec()->set_replicas(0);
  (*d.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = "bench";
  auto* t = d.mutable_spec()->mutable_template_();
  (*t->mutable_metadata()->mutable_labels())["app"] = "bench";
  auto* c = t->mutable_spec()->add_containers();
  c->set_name("app");
  c->set_image("soscscs/myapp:v1");
  (*c->mutable_resources()->mutable_requests())["cpu"] = "10m";
  (*c->mutable_resources()->mutable_requests())["memory"] = "16Mi";
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  std::string address, token;
  int replicas = 10000, cm_pid = 0;
  CLI::App app{"controller_bench"};
  app.add_option("--apiserver", address)->required();
  app.add_option("--token", token)->required();
  app.add_option("--replicas", replicas)->capture_default_str();
  app.add_option("--cm-pid", cm_pid, "Read the controller-manager's CPU and RSS here");
  std::vector<std::string> daemons;
  app.add_option("--daemon", daemons,
                 "NAME=PID: print this process's CPU seconds in each phase (repeatable)");
  int timeout_s = 600;
  app.add_option("--timeout", timeout_s, "Seconds each phase may take before it counts as failed")
      ->capture_default_str();
  double idle_seconds = 0;
  app.add_option("--idle", idle_seconds,
                 "Seconds to watch the daemons' CPU before scaling (the idle cluster's cost)");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::pair<std::string, int>> watched;
  for (const std::string& d : daemons) {
    const size_t eq = d.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "controller_bench: --daemon %s: want NAME=PID\n", d.c_str());
      return 2;
    }
    watched.emplace_back(d.substr(0, eq), std::stoi(d.substr(eq + 1)));
  }
  // CPU seconds of each watched daemon, read now.
  auto sample = [&] {
    std::vector<double> cpu;
    for (const auto& [name, pid] : watched) cpu.push_back(CpuSeconds(pid));
    return cpu;
  };

  mkube::client::ClientOptions o;
  o.address = address;
  o.token = token;
  mkube::client::GrpcClient client(o);
  if (!mkube::bench::MakeBenchNamespace(&client, "controller_bench")) return 1;
  Census census;
  mkube::client::Informer<Pod> pods(&client, "pods", {.ns = "bench"});
  pods.AddHandlers({[&](const auto& p) { census.Set(*p); },
                    [&](const auto&, const auto& p) { census.Set(*p); },
                    [&](const auto& p) { census.Erase(*p); }});
  pods.Start();
  if (!pods.WaitForCacheSync(std::chrono::seconds(30))) {
    std::fprintf(stderr, "controller_bench: the pod cache did not sync\n");
    return 1;
  }
  if (auto r = client.Create<mkube::api::Deployment>("deployments", "bench", BenchDeployment());
      !r.ok()) {
    std::fprintf(stderr, "controller_bench: deployment: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const std::vector<double> idle0 = sample();
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_seconds));
  const std::vector<double> d0 = sample();
  const double cpu0 = cm_pid ? CpuSeconds(cm_pid) : 0;
  // Waits until `done` holds of the counts; the seconds it took from `start` (-1: timed out).
  auto wait = [&](Clock::time_point start, auto done, const std::string& image) {
    const Clock::time_point deadline = start + std::chrono::seconds(timeout_s);
    while (Clock::now() < deadline) {
      if (done(census.Count(image))) {
        return std::chrono::duration<double>(Clock::now() - start).count();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1.0;
  };
  const Clock::time_point scaled = Clock::now();
  if (auto r = client.Patch<mkube::api::Scale>(
          "deployments", "bench", "bench", fmt::format(R"({{"spec":{{"replicas":{}}}}})", replicas),
          "scale");
      !r.ok()) {
    std::fprintf(stderr, "controller_bench: scale: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const std::string v1 = "soscscs/myapp:v1", v2 = "soscscs/myapp:v2";
  const double exist = wait(scaled, [&](const Census::Counts& c) { return c.exist >= replicas; }, v1);
  const double bound = wait(scaled, [&](const Census::Counts& c) { return c.bound >= replicas; }, v1);
  const double running =
      wait(scaled, [&](const Census::Counts& c) { return c.running >= replicas; }, v1);
  const double cpu1 = cm_pid ? CpuSeconds(cm_pid) : 0;
  const std::vector<double> d1 = sample();

  const Clock::time_point rolled = Clock::now();
  if (auto r = client.Patch<mkube::api::Deployment>(
          "deployments", "bench", "bench",
          // A merge patch replaces the whole list: the container as before, with the new image.
          fmt::format(R"({{"spec":{{"template":{{"spec":{{"containers":[{{"name":"app","image":"{}",)"
                      R"("resources":{{"requests":{{"cpu":"10m","memory":"16Mi"}}}}}}]}}}}}}}})",
                      v2));
      !r.ok()) {
    std::fprintf(stderr, "controller_bench: set image: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const double rollout = wait(
      rolled,
      [&](const Census::Counts& c) { return c.running_new >= replicas && c.old == 0; }, v2);
  const double cpu2 = cm_pid ? CpuSeconds(cm_pid) : 0;
  const std::vector<double> d2 = sample();
  pods.Stop();
  // One line per daemon: its CPU seconds idle (per second), in the scale and in the rollout.
  for (size_t i = 0; i < watched.size(); ++i) {
    std::fprintf(stderr, "  %-20s idle %.2f cpu/s  scale %6.2f s  rollout %6.2f s\n",
                 watched[i].first.c_str(),
                 idle_seconds > 0 ? (d0[i] - idle0[i]) / idle_seconds : 0.0, d1[i] - d0[i],
                 d2[i] - d1[i]);
  }
  std::printf(
      "replicas=%d exist_s=%.2f bound_s=%.2f running_s=%.2f rollout_s=%.2f cm_cpu_s_scale=%.2f "
      "cm_cpu_s_rollout=%.2f cm_rss_mib=%lld\n",
      replicas, exist, bound, running, rollout, cpu1 - cpu0, cpu2 - cpu1,
      static_cast<long long>(cm_pid ? RssMib(cm_pid) : 0));
  return running >= 0 && rollout >= 0 ? 0 : 1;
}
