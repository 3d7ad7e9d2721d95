// watch_fanout: many pod watchers on the apiserver while pods are created; prints events
// delivered per second, create-to-delivery latency, and the time of a full list. Only creates
// that succeeded count in the create rate and latency, and each must reach every watcher; a
// failed create (errors=), an event that never arrived or a failed list makes the exit status 1.
//   watch_fanout --apiserver HOST:PORT --token T [--watchers 1000] [--pods 10000]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/io/coded_stream.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "client/client.h"
#include "tests/bench/http_watch.h"
#include "proto/api/core.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// What one watcher has seen: events, messages, and sampled create-to-delivery latencies.
class Tally {
 public:
  Tally(int64_t want, bool sample, std::atomic<int64_t>* delivered, std::atomic<int64_t>* last_ns)
      : want_(want), sample_(sample), delivered_(delivered), last_ns_(last_ns) {}
  // Counts a message's events; false once the watcher has all it waits for. The message is
  // scanned in its wire format (a WatchBatch is field 1, a WatchEvent, repeated): decoding
  // every event would measure the client rather than the server.
  bool Add(const grpc::ByteBuffer& message) {
    std::vector<grpc::Slice> slices;
    if (!message.Dump(&slices).ok()) return false;
    std::string_view wire;
    if (slices.size() == 1) {
      wire = {reinterpret_cast<const char*>(slices[0].begin()), slices[0].size()};
    } else {
      flat_.clear();
      for (const auto& sl : slices) flat_.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
      wire = flat_;
    }
    int64_t added = 0;
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(wire.data()),
                                              static_cast<int>(wire.size()));
    for (uint32_t tag; (tag = in.ReadTag()) != 0;) {
      uint32_t len;
      if (tag != 0x0a || !in.ReadVarint32(&len)) return false;
      const auto limit = in.PushLimit(static_cast<int>(len));
      bool is_added = false;
      std::string object;
      for (uint32_t field; (field = in.ReadTag()) != 0;) {
        uint32_t flen;
        if ((field & 7) != 2 || !in.ReadVarint32(&flen)) return false;
        if (field >> 3 == 1) {  // type
          std::string type;
          if (!in.ReadString(&type, static_cast<int>(flen))) return false;
          is_added = type == "ADDED";
        } else if (field >> 3 == 2 && sample_) {  // object: only a sampled watcher decodes it
          if (!in.ReadString(&object, static_cast<int>(flen))) return false;
        } else if (!in.Skip(static_cast<int>(flen))) {
          return false;
        }
      }
      in.PopLimit(limit);
      if (!is_added) continue;
      ++added;
      mkube::api::Pod pod;
      if (sample_ && pod.ParseFromString(object)) {
        auto it = pod.metadata().annotations().find("bench/sent-ns");
        if (it != pod.metadata().annotations().end()) {
          const int64_t now = NowNs();
          latencies_.push_back(static_cast<double>(now - std::stoll(it->second)) / 1e6);
          delivered_at_.push_back(now);
        }
      }
    }
    seen_ += added;
    ++batches_;
    delivered_->fetch_add(added);
    last_ns_->store(NowNs());
    return seen_ < want_;
  }
  // One line of an HTTP watch (JSON): counted when ADDED, sampled like the gRPC side.
  bool AddLine(std::string_view line) {
    if (bench::IsAdded(line)) {
      if (sample_) {
        if (const int64_t sent = bench::SentNs(line); sent > 0) {
          const int64_t now = NowNs();
          latencies_.push_back(static_cast<double>(now - sent) / 1e6);
          delivered_at_.push_back(now);
        }
      }
      ++seen_;
      delivered_->fetch_add(1);
      last_ns_->store(NowNs());
    }
    return seen_ < want_;
  }
  void Done() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  // Waits for the end of the watch; then the latencies are ours to read.
  const std::vector<double>& Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return latencies_;
  }
  int64_t batches() const { return batches_; }
  // When each sampled latency was seen (after Wait).
  const std::vector<int64_t>& delivered_at() const { return delivered_at_; }

 private:
  const int64_t want_;
  const bool sample_;
  std::atomic<int64_t>* delivered_;
  std::atomic<int64_t>* last_ns_;
  int64_t seen_ = 0, batches_ = 0;
  std::vector<double> latencies_;
  std::vector<int64_t> delivered_at_;
  std::string flat_;  // a message that arrived in several slices, joined
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// A watch read from a completion queue that one of a few threads polls: no hand-off to
// another thread per message. It is a generic call whose messages stay raw bytes.
class Watch {
 public:
  template <typename... TallyArgs>
  explicit Watch(TallyArgs&&... args) : tally_(std::forward<TallyArgs>(args)...) {}
  void Start(grpc::GenericStub* stub, const std::string& token,
             const mkube::apiserver::WatchRequest& req, grpc::CompletionQueue* cq) {
    ctx_.AddMetadata("authorization", "Bearer " + token);
    bool own = false;
    if (!grpc::GenericSerialize<grpc::ProtoBufferWriter, mkube::apiserver::WatchRequest>(
             req, &request_, &own)
             .ok()) {
      std::abort();
    }
    call_ = stub->PrepareCall(&ctx_, "/mkube.apiserver.Api/Watch", cq);
    call_->StartCall(this);
  }
  // The queue's event for this watch.
  void Proceed(bool ok) {
    switch (state_) {
      case kStarting:
        if (!ok) break;
        state_ = kRequesting;
        call_->WriteLast(request_, grpc::WriteOptions(), this);
        return;
      case kRequesting:
      case kReading:
        if (!ok || (state_ == kReading && !tally_.Add(message_))) break;
        state_ = kReading;
        call_->Read(&message_, this);
        return;
      case kFinishing:
        tally_.Done();
        return;
    }
    if (ok) ctx_.TryCancel();
    state_ = kFinishing;
    call_->Finish(&status_, this);
  }
  void Cancel() { ctx_.TryCancel(); }
  Tally& tally() { return tally_; }

 private:
  enum State { kStarting, kRequesting, kReading, kFinishing };
  Tally tally_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  grpc::ByteBuffer request_, message_;
  grpc::Status status_;
  State state_ = kStarting;
};

// A watcher over the Kubernetes HTTP API: its tally and its connection.
struct HttpWatcher {
  HttpWatcher(boost::asio::io_context& ioc, int64_t want, bool sample,
              std::atomic<int64_t>* delivered, std::atomic<int64_t>* last_ns)
      : tally(want, sample, delivered, last_ns),
        watch(ioc, [this](std::string_view line) { return tally.AddLine(line); },
              [this] { tally.Done(); }) {}
  Tally tally;
  bench::HttpWatch watch;
};

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
  app.add_option("--connections", channels, "Connections the watchers are spread over")
      ->capture_default_str();
  int warmup_pods = 0;
  app.add_option("--warmup-pods", warmup_pods,
                 "The first N pods are created like the rest but their latency is not counted "
                 "(the first seconds of load are slower on both stores: see --timeline)")
      ->capture_default_str();
  bool timeline = false;
  app.add_flag("--timeline", timeline,
               "Also print, per second of the run, the sampled latencies' count, p50 and max "
               "(on stderr): shows whether the tail is steady or comes in stalls");
  double rate = 0;
  app.add_option("--create-rate", rate, "Pods created per second (0: as fast as the writers go)")
      ->capture_default_str();
  std::string http;
  app.add_option("--http", http,
                 "The apiserver's Kubernetes HTTP API (plain HTTP): the watchers use it, "
                 "reading JSON lines; creates and the list stay on gRPC");
  CLI11_PARSE(app, argc, argv);
  // As in the daemons: gRPC's mutexes are not checked for lock cycles on every acquisition.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  std::vector<std::unique_ptr<mkube::client::ApiClient>> clients;
  for (int c = 0; c < channels; ++c) {
    mkube::client::ClientOptions o;
    o.address = address;
    o.token = token;
    o.timeout = std::chrono::seconds(60);
    o.own_connection = true;
    clients.push_back(std::make_unique<mkube::client::GrpcClient>(o));
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
  std::atomic<int64_t> delivered{0};
  std::vector<double> latencies;
  std::atomic<int64_t> last_ns{0};
  std::vector<std::unique_ptr<Watch>> watches;
  // The watches: a stub per connection, read from two completion-queue threads.
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  std::vector<std::unique_ptr<grpc::CompletionQueue>> queues;
  std::vector<std::thread> pollers;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(INT32_MAX);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, mkube::client::kStreamWindowBytes);
    stubs.push_back(std::make_unique<grpc::GenericStub>(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args)));
  }
  for (int q = 0; q < 2; ++q) queues.push_back(std::make_unique<grpc::CompletionQueue>());
  for (int w = 0; http.empty() && w < watchers; ++w) {
    mkube::apiserver::WatchRequest req;
    req.set_resource("pods");
    req.set_resource_version(list->resource_version());
    const bool sample = w % 50 == 0;
    // Each watcher waits for the warm-up pod and the measured ones.
    watches.push_back(std::make_unique<Watch>(pods + 1, sample, &delivered, &last_ns));
    watches.back()->Start(stubs[static_cast<size_t>(w % channels)].get(), token, req,
                          queues[static_cast<size_t>(w) % queues.size()].get());
  }
  // Or over HTTP: one Asio context, read by two threads as the gRPC queues are.
  boost::asio::io_context ioc;
  std::vector<std::unique_ptr<HttpWatcher>> http_watches;
  std::vector<std::thread> http_threads;
  if (!http.empty()) {
    const size_t colon = http.rfind(':');
    const boost::asio::ip::tcp::endpoint server(boost::asio::ip::make_address(http.substr(0, colon)),
                                                static_cast<uint16_t>(std::stoi(http.substr(colon + 1))));
    const std::string target = "/api/v1/pods?watch=1&resourceVersion=" + list->resource_version();
    for (int w = 0; w < watchers; ++w) {
      http_watches.push_back(std::make_unique<HttpWatcher>(ioc, pods + 1, w % 50 == 0, &delivered, &last_ns));
      http_watches.back()->watch.Start(server, token, target);
    }
    for (int t = 0; t < 2; ++t) http_threads.emplace_back([&ioc] { ioc.run(); });
  }
  for (auto& q : queues) {
    pollers.emplace_back([cq = q.get()] {
      void* tag;
      bool ok;
      while (cq->Next(&tag, &ok)) static_cast<Watch*>(tag)->Proceed(ok);
    });
  }
  // Warm-up: one pod every watcher must see before the measured creates start, so that the
  // figures are about watchers that are watching, not about 1000 watches being set up (which
  // otherwise dominates the first seconds' latency on both stores).
  {
    mkube::api::Pod warm;
    warm.mutable_metadata()->set_name("fanout-warmup");
    auto* ctr = warm.mutable_spec()->add_containers();
    ctr->set_name("c");
    ctr->set_image("soscscs/myapp:v1");
    if (auto r = clients[0]->Create("pods", "default", warm); !r.ok()) {
      std::fprintf(stderr, "warm-up create failed: %s\n", r.status().ToString().c_str());
      return 1;
    }
    for (int i = 0; i < 6000 && delivered < watchers; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (delivered < watchers) {
      std::fprintf(stderr, "only %lld of %d watchers saw the warm-up pod\n",
                   static_cast<long long>(delivered.load()), watchers);
      return 1;
    }
    delivered -= watchers;
    // Every creating connection is established before the clock starts: connecting is not
    // what is measured.
    for (auto& client : clients) {
      if (auto r = client->Get<mkube::api::Pod>("pods", "default", "fanout-warmup"); !r.ok()) {
        std::fprintf(stderr, "warm-up get failed: %s\n", r.status().ToString().c_str());
        return 1;
      }
    }
  }
  const int64_t start = NowNs();
  std::atomic<int> next{0};
  std::vector<std::thread> writers;
  std::mutex create_mu;
  std::vector<double> create_ms;  // of the creates that succeeded
  std::map<int64_t, std::vector<double>> create_by_second;
  std::atomic<int> failed{0};
  for (int c = 0; c < creators; ++c) {
    writers.emplace_back([&, c] {
      auto* client = clients[static_cast<size_t>(c % channels)].get();
      for (int i = next++; i < pods; i = next++) {
        if (rate > 0) {  // open loop: pod i is due at start + i/rate, however the server fares
          const int64_t due = start + static_cast<int64_t>(static_cast<double>(i) * 1e9 / rate);
          if (const int64_t wait = due - NowNs(); wait > 0) {
            std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
          }
        }
        mkube::api::Pod pod;
        pod.mutable_metadata()->set_name("fanout-" + std::to_string(i));
        (*pod.mutable_metadata()->mutable_labels())["app"] = "fanout";
        if (i >= warmup_pods) {
          (*pod.mutable_metadata()->mutable_annotations())["bench/sent-ns"] = std::to_string(NowNs());
        }
        auto* ctr = pod.mutable_spec()->add_containers();
        ctr->set_name("c");
        ctr->set_image("soscscs/myapp:v1");
        const int64_t t0 = NowNs();
        auto r = client->Create("pods", "default", pod);
        if (!r.ok()) {
          if (failed.fetch_add(1) < 5) {
            std::fprintf(stderr, "create failed: %s\n", r.status().ToString().c_str());
          }
          continue;
        }
        std::lock_guard<std::mutex> lock(create_mu);
        create_ms.push_back(static_cast<double>(NowNs() - t0) / 1e6);
        create_by_second[(t0 - start) / 1'000'000'000].push_back(create_ms.back());
      }
    });
  }
  for (auto& t : writers) t.join();
  const int64_t created_ns = NowNs();
  const int created = pods - failed.load();
  // Every watcher sees each pod that was created, and only those.
  const int64_t due = static_cast<int64_t>(watchers) * created;
  for (int i = 0; i < 12000 && delivered < due; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& w : watches) w->Cancel();
  for (auto& w : http_watches) w->watch.Cancel();
  int64_t batches = 0;
  std::map<int64_t, std::vector<double>> by_second;
  auto gather = [&](Tally& tally) {
    const auto& mine = tally.Wait();
    batches += tally.batches();
    latencies.insert(latencies.end(), mine.begin(), mine.end());
    const auto& at = tally.delivered_at();
    for (size_t i = 0; i < mine.size(); ++i) by_second[(at[i] - start) / 1'000'000'000].push_back(mine[i]);
  };
  for (auto& w : watches) gather(w->tally());
  for (auto& w : http_watches) {
    gather(w->tally);
    batches += w->watch.chunks();  // for HTTP: events per chunk read
  }
  ioc.stop();
  for (auto& t : http_threads) t.join();
  if (timeline) {
    for (auto& [sec, v] : by_second) {
      std::sort(v.begin(), v.end());
      auto& c = create_by_second[sec];
      std::sort(c.begin(), c.end());
      std::fprintf(stderr, "t=%llds samples=%zu p50_ms=%.1f max_ms=%.1f creates=%zu p50_ms=%.1f max_ms=%.1f\n",
                   static_cast<long long>(sec), v.size(), v[v.size() / 2], v.back(), c.size(),
                   c.empty() ? 0.0 : c[c.size() / 2], c.empty() ? 0.0 : c.back());
    }
  }
  for (auto& q : queues) q->Shutdown();
  for (auto& t : pollers) t.join();
  const double seconds = static_cast<double>(std::max(last_ns.load(), created_ns) - start) / 1e9;
  auto pct_of = [](std::vector<double>& v, double p) {
    std::sort(v.begin(), v.end());
    return v.empty()
               ? 0.0
               : v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
  };
  auto pct = [&](double p) { return pct_of(latencies, p); };
  // A full list of everything created.
  const int64_t l0 = NowNs();
  auto full = clients[0]->List([] {
    mkube::apiserver::ListRequest r;
    r.set_resource("pods");
    return r;
  }());
  const double list_ms = static_cast<double>(NowNs() - l0) / 1e6;
  std::printf(
      "watchers=%d pods=%d errors=%d delivered=%lld expected=%lld seconds=%.2f create_per_s=%.0f "
      "create_p50_ms=%.1f create_p99_ms=%.1f deliveries_per_s=%.0f events_per_message=%.1f "
      "p50_ms=%.1f p99_ms=%.1f list_items=%d list_ms=%.1f\n",
      watchers, pods, failed.load(), static_cast<long long>(delivered.load()),
      static_cast<long long>(due), seconds,
      created / (static_cast<double>(created_ns - start) / 1e9), pct_of(create_ms, 0.5),
      pct_of(create_ms, 0.99), static_cast<double>(delivered.load()) / seconds,
      static_cast<double>(delivered.load()) / static_cast<double>(std::max<int64_t>(1, batches)),
      pct(0.5), pct(0.99), full.ok() ? full->items_size() : -1, list_ms);
  int status = 0;
  if (failed.load() > 0) {
    std::fprintf(stderr, "watch_fanout: %d of %d creates failed\n", failed.load(), pods);
    status = 1;
  }
  if (delivered.load() != due) {
    std::fprintf(stderr, "watch_fanout: %lld events delivered of the %lld due\n",
                 static_cast<long long>(delivered.load()), static_cast<long long>(due));
    status = 1;
  }
  if (!full.ok()) {
    std::fprintf(stderr, "watch_fanout: the full list failed: %s\n",
                 full.status().ToString().c_str());
    status = 1;
  }
  return status;
}
