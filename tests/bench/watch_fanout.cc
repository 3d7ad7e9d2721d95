// watch_fanout: many pod watchers on the apiserver while pods are created; prints events
// delivered per second, create-to-delivery latency, and the time of a full list.
//   watch_fanout --apiserver HOST:PORT --token T [--watchers 1000] [--pods 10000]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/client.h"
#include "proto/api/core.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string address, token;
  int watchers = 1000, pods = 10000, creators = 32, channels = 8;
  CLI::App app{"watch_fanout"};
  app.add_option("--apiserver", address)->required();
  app.add_option("--token", token)->required();
  app.add_option("--watchers", watchers)->capture_default_str();
  app.add_option("--pods", pods)->capture_default_str();
  app.add_option("--creators", creators)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<std::unique_ptr<mkube::client::ApiClient>> clients;
  for (int c = 0; c < channels; ++c) {
    mkube::client::ClientOptions o;
    o.address = address;
    o.token = token;
    o.timeout = std::chrono::seconds(60);
    // A distinct target string per client gives each its own connection.
    o.address = address;
    clients.push_back(std::make_unique<mkube::client::ApiClient>(o));
  }
  auto list = clients[0]->List([] {
    mkube::apiserver::ListRequest r;
    r.set_resource("pods");
    return r;
  }());
  if (!list.ok()) {
    std::fprintf(stderr, "list failed: %s\n", list.status().ToString().c_str());
    return 1;
  }
  const int64_t expected = static_cast<int64_t>(watchers) * pods;
  std::atomic<int64_t> delivered{0};
  std::mutex mu;
  std::vector<double> latencies;
  std::vector<std::unique_ptr<mkube::client::ApiClient::WatchStream>> streams;
  std::vector<std::thread> readers;
  std::atomic<int64_t> last_ns{0};
  // Watchers are read by a few threads, each owning a slice of the streams in turn.
  for (int w = 0; w < watchers; ++w) {
    mkube::apiserver::WatchRequest req;
    req.set_resource("pods");
    req.set_resource_version(list->resource_version());
    streams.push_back(clients[static_cast<size_t>(w % channels)]->Watch(req));
  }
  for (int w = 0; w < watchers; ++w) {
    readers.emplace_back([&, s = streams[static_cast<size_t>(w)].get(), w] {
      mkube::apiserver::WatchEvent ev;
      int64_t n = 0;
      std::vector<double> mine;
      while (s->Read(&ev)) {
        if (ev.type() != "ADDED") continue;
        ++n;
        // Latency from a sample: decoding every object would measure the client.
        if (w % 50 == 0) {
          mkube::api::Pod pod;
          if (pod.ParseFromString(ev.object())) {
            auto it = pod.metadata().annotations().find("bench/sent-ns");
            if (it != pod.metadata().annotations().end()) {
              mine.push_back(static_cast<double>(NowNs() - std::stoll(it->second)) / 1e6);
            }
          }
        }
        last_ns = NowNs();
        if (delivered.fetch_add(1) + 1 >= expected) break;
        if (n >= pods) break;
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  const int64_t start = NowNs();
  std::atomic<int> next{0};
  std::vector<std::thread> writers;
  for (int c = 0; c < creators; ++c) {
    writers.emplace_back([&, c] {
      auto* client = clients[static_cast<size_t>(c % channels)].get();
      for (int i = next++; i < pods; i = next++) {
        mkube::api::Pod pod;
        pod.mutable_metadata()->set_name("fanout-" + std::to_string(i));
        (*pod.mutable_metadata()->mutable_labels())["app"] = "fanout";
        (*pod.mutable_metadata()->mutable_annotations())["bench/sent-ns"] = std::to_string(NowNs());
        auto* ctr = pod.mutable_spec()->add_containers();
        ctr->set_name("c");
        ctr->set_image("soscscs/myapp:v1");
        auto r = client->Create("pods", "default", pod);
        if (!r.ok()) std::fprintf(stderr, "create failed: %s\n", r.status().ToString().c_str());
      }
    });
  }
  for (auto& t : writers) t.join();
  const int64_t created_ns = NowNs();
  for (int i = 0; i < 12000 && delivered < expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& s : streams) s->Cancel();
  for (auto& t : readers) t.join();
  const double seconds = static_cast<double>(std::max(last_ns.load(), created_ns) - start) / 1e9;
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies.empty() ? 0.0 : latencies[std::min(latencies.size() - 1, static_cast<size_t>(p * static_cast<double>(latencies.size())))];
  };
  // A full list of everything created.
  const int64_t l0 = NowNs();
  auto full = clients[0]->List([] {
    mkube::apiserver::ListRequest r;
    r.set_resource("pods");
    return r;
  }());
  const double list_ms = static_cast<double>(NowNs() - l0) / 1e6;
  std::printf("watchers=%d pods=%d delivered=%lld expected=%lld seconds=%.2f create_per_s=%.0f "
              "deliveries_per_s=%.0f p50_ms=%.1f p99_ms=%.1f list_items=%d list_ms=%.1f\n",
              watchers, pods, static_cast<long long>(delivered.load()),
              static_cast<long long>(expected), seconds,
              pods / (static_cast<double>(created_ns - start) / 1e9),
              static_cast<double>(delivered.load()) / seconds, pct(0.5), pct(0.99),
              full.ok() ? full->items_size() : -1, list_ms);
  return 0;
}
