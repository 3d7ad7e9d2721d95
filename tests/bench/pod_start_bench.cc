// How long a real node takes to start pods: creates --pods busybox pods bound to --node one
// after another, each waited for until Running (create to Running, per pod), then as many at
// once (create of the first to all Running); deletes them between and after. Then --execs
// commands (`true`) one after another in the first pod through the apiserver and the node's
// agent (the exec call to its exit code). One line:
//   pods=N seq_p50_ms=.. seq_p90_ms=.. seq_max_ms=.. burst_s=.. exec_p50_ms=.. exec_p90_ms=..
//   pod_start_bench --apiserver HOST:PORT --token T --node NAME [--pods 40] [--execs 100]
//                   [--image busybox] [--no-burst]
// --image: the pods' image (IfNotPresent; it must have sleep); the first pod's start includes
// its pull when the node lacks it. --no-burst: the pods one after another only.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/client.h"
#include "client/informer.h"
#include "fmt/format.h"
#include "proto/agent/agent.pb.h"
#include "proto/api/core.pb.h"
#include "tests/bench/bench_util.h"

namespace {

using Clock = std::chrono::steady_clock;

// The phases of the bench namespace's pods, as the watch reports them.
class Phases {
 public:
  void Set(const mkube::api::Pod& p) {
    std::lock_guard<std::mutex> lock(mu_);
    phase_[p.metadata().name()] = p.status().phase();
    cv_.notify_all();
  }
  void Erase(const mkube::api::Pod& p) {
    std::lock_guard<std::mutex> lock(mu_);
    phase_.erase(p.metadata().name());
    cv_.notify_all();
  }
  // Waits until `count` of the names are Running (true) or 60 s pass.
  bool WaitRunning(const std::vector<std::string>& names, size_t count) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] {
      size_t running = 0;
      for (const auto& n : names) {
        auto it = phase_.find(n);
        running += it != phase_.end() && it->second == "Running";
      }
      return running >= count;
    });
  }
  bool WaitEmpty() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return phase_.empty(); });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> phase_;
};

mkube::api::Pod BenchPod(const std::string& name, const std::string& node,
                         const std::string& image) {
  mkube::api::Pod pod;
  pod.set_api_version("v1");
  pod.set_kind("Pod");
  pod.mutable_metadata()->set_name(name);
  pod.mutable_metadata()->set_namespace_("bench");
  pod.mutable_spec()->set_node_name(node);
  pod.mutable_spec()->set_termination_grace_period_seconds(0);
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image(image);
  c->set_image_pull_policy("IfNotPresent");
  c->add_command("sleep");
  c->add_command("3600");
  return pod;
}

// Runs `true` in the pod's container through the apiserver; its milliseconds, or -1 (said on
// stderr) when the exec failed.
double TimeExec(mkube::client::GrpcClient* client, const std::string& pod) {
  const Clock::time_point began = Clock::now();
  mkube::agent::ExecInput first;
  auto* start = first.mutable_start();
  start->set_namespace_("bench");
  start->set_pod(pod);
  start->set_container("c");
  start->add_command("true");
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = client->Exec(&ctx);
  std::optional<int> exit_code;
  if (stream->Write(first)) {
    mkube::agent::ExecOutput out;
    while (stream->Read(&out)) {
      if (out.has_exit_code()) {
        exit_code = out.exit_code();
        stream->WritesDone();
      }
    }
  }
  const grpc::Status st = stream->Finish();
  if (!st.ok() || exit_code != 0) {
    std::fprintf(stderr, "pod_start_bench: exec: %s (exit code %d)\n", st.error_message().c_str(),
                 exit_code.value_or(-1));
    return -1;
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - began).count();
}

// The q-quantile of sorted figures.
double At(const std::vector<double>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))];
}

bool DeleteAll(mkube::client::ApiClient* client, const std::vector<std::string>& names,
               Phases* phases) {
  for (const auto& n : names) {
    mkube::apiserver::DeleteRequest req;
    req.set_resource("pods");
    req.set_namespace_("bench");
    req.set_name(n);
    req.set_grace_period_seconds(0);
    (void)client->Delete(req);
  }
  return phases->WaitEmpty();
}

}  // namespace

int main(int argc, char** argv) {
  std::string address, token, node;
  int count = 40;
  CLI::App app{"pod_start_bench"};
  app.add_option("--apiserver", address)->required();
  app.add_option("--token", token)->required();
  app.add_option("--node", node)->required();
  app.add_option("--pods", count)->capture_default_str()->check(CLI::Range(1, 1000));
  int execs = 100;
  app.add_option("--execs", execs)->capture_default_str()->check(CLI::Range(0, 100000));
  std::string image = "busybox";
  app.add_option("--image", image)->capture_default_str();
  bool no_burst = false;
  app.add_flag("--no-burst", no_burst);
  CLI11_PARSE(app, argc, argv);

  mkube::client::ClientOptions o;
  o.address = address;
  o.token = token;
  mkube::client::GrpcClient client(o);
  if (!mkube::bench::MakeBenchNamespace(&client, "pod_start_bench")) return 1;
  Phases phases;
  mkube::client::Informer<mkube::api::Pod> pods(&client, "pods", {.ns = "bench"});
  pods.AddHandlers({[&](const auto& p) { phases.Set(*p); },
                    [&](const auto&, const auto& p) { phases.Set(*p); },
                    [&](const auto& p) { phases.Erase(*p); }});
  pods.Start();
  if (!pods.WaitForCacheSync(std::chrono::seconds(30))) return 1;

  std::vector<std::string> names;
  std::vector<double> latency_ms;
  for (int i = 0; i < count; ++i) {
    names.push_back(fmt::format("seq-{}", i));
    const Clock::time_point began = Clock::now();
    if (auto r = client.Create<mkube::api::Pod>("pods", "bench", BenchPod(names.back(), node, image));
        !r.ok()) {
      std::fprintf(stderr, "pod_start_bench: create: %s\n", r.status().ToString().c_str());
      return 1;
    }
    if (!phases.WaitRunning({names.back()}, 1)) {
      std::fprintf(stderr, "pod_start_bench: %s never ran\n", names.back().c_str());
      return 1;
    }
    latency_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - began).count());
  }
  std::vector<double> exec_ms;
  for (int i = 0; i < execs; ++i) {
    const double ms = TimeExec(&client, names.front());
    if (ms < 0) return 1;
    exec_ms.push_back(ms);
  }
  if (!DeleteAll(&client, names, &phases)) return 1;
  std::sort(latency_ms.begin(), latency_ms.end());
  std::sort(exec_ms.begin(), exec_ms.end());

  double burst_s = -1;
  if (!no_burst) {
    names.clear();
    const Clock::time_point burst = Clock::now();
    for (int i = 0; i < count; ++i) {
      names.push_back(fmt::format("burst-{}", i));
      if (!client.Create<mkube::api::Pod>("pods", "bench", BenchPod(names.back(), node, image))
               .ok()) {
        return 1;
      }
    }
    if (!phases.WaitRunning(names, names.size())) return 1;
    burst_s = std::chrono::duration<double>(Clock::now() - burst).count();
    if (!DeleteAll(&client, names, &phases)) return 1;
  }
  pods.Stop();
  std::printf("pods=%d seq_p50_ms=%.1f seq_p90_ms=%.1f seq_max_ms=%.1f", count,
              At(latency_ms, 0.5), At(latency_ms, 0.9), latency_ms.back());
  if (burst_s >= 0) std::printf(" burst_s=%.2f", burst_s);
  if (!exec_ms.empty()) {
    std::printf(" exec_p50_ms=%.2f exec_p90_ms=%.2f", At(exec_ms, 0.5), At(exec_ms, 0.9));
  }
  std::printf("\n");
  return 0;
}
