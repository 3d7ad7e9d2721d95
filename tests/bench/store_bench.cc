// store_bench: load generator for any etcd v3 endpoint (mkube-store or etcd), so both are
// measured by the same client. Prints one line of key=value figures per run. Only calls that
// succeeded count in throughput and latency; failed ones are counted as errors=, the first
// one's status goes to stderr, and any error makes the exit status 1. client_cpu_us_per_op is
// this process's CPU (user and system) per successful call.
//
//   store_bench --endpoint HOST:PORT put   --clients N --seconds S [--value-bytes B]
//   store_bench --endpoint HOST:PORT range --clients N --seconds S
//   store_bench --endpoint HOST:PORT watch --watchers N --streams K --puts P
// With --cacert (and --cert/--key) it speaks TLS.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/etcd/rpc.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Plaintext, or TLS when --cacert is given.
std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& endpoint, int index) {
  grpc::ChannelArguments args;
  // A distinct argument per index gives each channel its own connection.
  args.SetInt("mkube.bench.channel", index);
  args.SetMaxReceiveMessageSize(INT32_MAX);
  return grpc::CreateCustomChannel(endpoint, credentials, args);
}

// This process's CPU time so far (user and system), in seconds.
double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Counts failed calls and keeps the first one's status, to say why.
class Errors {
 public:
  void Add(const std::string& what, const grpc::Status& status) {
    if (count_.fetch_add(1) > 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    first_ = what + ": " + std::to_string(status.error_code()) + " " + status.error_message();
  }
  int64_t count() const { return count_.load(); }
  // Says on stderr how many failed and the first's status; the exit status for main.
  int Report() {
    if (count() == 0) return 0;
    std::lock_guard<std::mutex> lock(mu_);
    std::fprintf(stderr, "store_bench: %lld calls failed; the first: %s\n",
                 static_cast<long long>(count()), first_.c_str());
    return 1;
  }

 private:
  std::atomic<int64_t> count_{0};
  std::mutex mu_;
  std::string first_;
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(i), v.end());
  return v[i];
}

// Keeps `clients` requests in flight over several connections and completion queues until
// the time is up. `kind` is "put" or "range".
int RunUnary(const std::string& endpoint, const std::string& kind, int clients, double seconds,
             int value_bytes) {
  const int threads = std::min(2, clients);
  const int channels = std::max(1, std::min(16, clients / 64 + 1));
  std::vector<std::unique_ptr<etcdserverpb::KV::Stub>> stubs;
  for (int c = 0; c < channels; ++c) stubs.push_back(etcdserverpb::KV::NewStub(NewChannel(endpoint, c)));
  const std::string value(value_bytes, 'x');

  if (kind == "range") {  // something to read
    grpc::ClientContext ctx;
    etcdserverpb::PutRequest p;
    p.set_key("bench/range");
    p.set_value(value);
    etcdserverpb::PutResponse r;
    if (grpc::Status st = stubs[0]->Put(&ctx, p, &r); !st.ok()) {
      std::fprintf(stderr, "store_bench: the key to read could not be written: %d %s\n",
                   st.error_code(), st.error_message().c_str());
      return 1;
    }
  }

  struct Call {
    grpc::ClientContext ctx;
    grpc::Status status;
    etcdserverpb::PutResponse put;
    etcdserverpb::RangeResponse range;
    std::unique_ptr<grpc::ClientAsyncResponseReader<etcdserverpb::PutResponse>> put_rpc;
    std::unique_ptr<grpc::ClientAsyncResponseReader<etcdserverpb::RangeResponse>> range_rpc;
    int64_t start = 0;
  };
  Errors errors;
  std::mutex mu;
  std::vector<double> all_latencies;  // of the calls that succeeded
  const double cpu0 = CpuSeconds();
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  const int64_t start_ns = NowNs();
  std::atomic<int64_t> end_ns{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      grpc::CompletionQueue cq;
      std::vector<double> latencies;
      latencies.reserve(1 << 20);
      int64_t seq = 0;
      auto start_call = [&](int slot) {
        auto owned = std::make_unique<Call>();
        Call* call = owned.release();  // the completion queue hands it back as the tag
        call->start = NowNs();
        auto* stub = stubs[static_cast<size_t>(slot) % stubs.size()].get();
        if (kind == "put") {
          etcdserverpb::PutRequest req;
          req.set_key("bench/" + std::to_string(t) + "/" + std::to_string(seq++ % 10000));
          req.set_value(value);
          call->put_rpc = stub->AsyncPut(&call->ctx, req, &cq);
          call->put_rpc->Finish(&call->put, &call->status, call);
        } else {
          etcdserverpb::RangeRequest req;
          req.set_key("bench/range");
          call->range_rpc = stub->AsyncRange(&call->ctx, req, &cq);
          call->range_rpc->Finish(&call->range, &call->status, call);
        }
      };
      const int mine = clients / threads + (t < clients % threads ? 1 : 0);
      for (int i = 0; i < mine; ++i) start_call(i * threads + t);
      int in_flight = mine;
      int slot = 0;
      void* tag;
      bool ok;
      while (in_flight > 0 && cq.Next(&tag, &ok)) {
        std::unique_ptr<Call> call(static_cast<Call*>(tag));
        if (call->status.ok()) {
          latencies.push_back(static_cast<double>(NowNs() - call->start) / 1e6);
        } else {
          errors.Add(kind, call->status);
        }
        --in_flight;
        if (Clock::now() < deadline) {
          start_call(slot++);
          ++in_flight;
        }
      }
      int64_t now = NowNs();
      int64_t prev = end_ns.load();
      while (prev < now && !end_ns.compare_exchange_weak(prev, now)) {
      }
      std::lock_guard<std::mutex> lock(mu);
      all_latencies.insert(all_latencies.end(), latencies.begin(), latencies.end());
    });
  }
  for (auto& w : workers) w.join();
  const double cpu = CpuSeconds() - cpu0;
  const double elapsed = static_cast<double>(end_ns - start_ns) / 1e9;
  const double ops = static_cast<double>(all_latencies.size());
  std::printf("op=%s clients=%d ops=%.0f errors=%lld seconds=%.2f throughput=%.0f p50_ms=%.3f "
              "p99_ms=%.3f client_cpu_us_per_op=%.1f\n",
              kind.c_str(), clients, ops, static_cast<long long>(errors.count()), elapsed,
              ops / elapsed, Percentile(all_latencies, 0.50), Percentile(all_latencies, 0.99),
              ops > 0 ? cpu * 1e6 / ops : 0.0);
  return errors.Report();
}

// Opens `watchers` watchers on a prefix spread over `streams` streams, then writes `puts`
// keys (16 writers) stamped with their send time; measures delivery from commit to watcher.
// Every watcher must see every put that succeeded: a put that failed, a watch that was not
// created or an event that did not arrive within 120 s is an error.
int RunWatch(const std::string& endpoint, int watchers, int streams, int puts, int value_bytes) {
  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>> rw;
    std::vector<double> latencies;
    int64_t events = 0;
    int64_t last_ns = 0;
  };
  std::vector<std::unique_ptr<Stream>> all;
  std::vector<std::unique_ptr<etcdserverpb::Watch::Stub>> stubs;
  for (int s = 0; s < streams; ++s) {
    stubs.push_back(etcdserverpb::Watch::NewStub(NewChannel(endpoint, 100 + s)));
    auto st = std::make_unique<Stream>();
    st->rw = stubs.back()->Watch(&st->ctx);
    all.push_back(std::move(st));
  }
  for (int w = 0; w < watchers; ++w) {
    etcdserverpb::WatchRequest req;
    req.mutable_create_request()->set_key("watchbench/");
    req.mutable_create_request()->set_range_end("watchbench0");
    all[static_cast<size_t>(w % streams)]->rw->Write(req);
  }
  std::atomic<int> created{0};
  const int64_t total_expected = static_cast<int64_t>(watchers) * puts;
  std::atomic<int64_t> delivered{0};
  std::vector<std::thread> readers;
  for (auto& sp : all) {
    readers.emplace_back([&, s = sp.get()] {
      s->latencies.reserve(static_cast<size_t>(puts) * static_cast<size_t>(watchers / streams + 1));
      etcdserverpb::WatchResponse resp;
      while (s->rw->Read(&resp)) {
        if (resp.created()) {
          ++created;
          continue;
        }
        const int64_t now = NowNs();
        for (const auto& ev : resp.events()) {
          int64_t sent = 0;
          std::memcpy(&sent, ev.kv().value().data(), sizeof(sent));
          s->latencies.push_back(static_cast<double>(now - sent) / 1e6);
        }
        s->events += resp.events_size();
        s->last_ns = now;
        if (delivered.fetch_add(resp.events_size()) + resp.events_size() >= total_expected) break;
      }
    });
  }
  const auto create_limit = Clock::now() + std::chrono::seconds(60);
  while (created < watchers && Clock::now() < create_limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (created < watchers) {
    std::fprintf(stderr, "store_bench: %d of %d watches were created in 60 s\n", created.load(),
                 watchers);
    for (auto& s : all) s->ctx.TryCancel();
    for (auto& r : readers) r.join();
    return 1;
  }

  const int64_t start_ns = NowNs();
  std::vector<std::thread> writers;
  std::atomic<int> next{0};
  Errors errors;
  auto kv = etcdserverpb::KV::NewStub(NewChannel(endpoint, 999));
  for (int w = 0; w < 16; ++w) {
    writers.emplace_back([&] {
      std::string value(std::max<size_t>(sizeof(int64_t), static_cast<size_t>(value_bytes)), 'x');
      for (int i = next++; i < puts; i = next++) {
        int64_t now = NowNs();
        std::memcpy(value.data(), &now, sizeof(now));
        etcdserverpb::PutRequest req;
        req.set_key("watchbench/" + std::to_string(i));
        req.set_value(value);
        etcdserverpb::PutResponse resp;
        grpc::ClientContext ctx;
        if (grpc::Status st = kv->Put(&ctx, req, &resp); !st.ok()) errors.Add("put", st);
      }
    });
  }
  for (auto& w : writers) w.join();
  const int64_t writes_done = NowNs();
  // The readers stop at watchers x puts events; with failed puts that many never come.
  const int64_t want = static_cast<int64_t>(watchers) * (puts - errors.count());
  // Wait for delivery (bounded), then stop the readers.
  const auto limit = Clock::now() + std::chrono::seconds(120);
  while (delivered < want && Clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& s : all) s->ctx.TryCancel();
  for (auto& r : readers) r.join();
  std::vector<double> lat;
  int64_t last = writes_done;
  for (auto& s : all) {
    lat.insert(lat.end(), s->latencies.begin(), s->latencies.end());
    last = std::max(last, s->last_ns);
  }
  const double elapsed = static_cast<double>(last - start_ns) / 1e9;
  std::printf("op=watch watchers=%d streams=%d puts=%d errors=%lld delivered=%lld expected=%lld "
              "seconds=%.2f throughput=%.0f p50_ms=%.3f p99_ms=%.3f\n",
              watchers, streams, puts, static_cast<long long>(errors.count()),
              static_cast<long long>(delivered.load()), static_cast<long long>(want), elapsed,
              static_cast<double>(delivered.load()) / elapsed, Percentile(lat, 0.50),
              Percentile(lat, 0.99));
  int status = errors.Report();
  if (delivered.load() != want) {
    std::fprintf(stderr, "store_bench: %lld events delivered of the %lld due\n",
                 static_cast<long long>(delivered.load()), static_cast<long long>(want));
    status = 1;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"store_bench: load for an etcd v3 endpoint"};
  std::string endpoint = "127.0.0.1:2379";
  int clients = 1, watchers = 1000, streams = 10, puts = 1000, value_bytes = 256;
  double seconds = 3;
  app.add_option("--endpoint", endpoint)->capture_default_str();
  app.add_option("--value-bytes", value_bytes)->capture_default_str();
  std::string cacert, cert, key;
  app.add_option("--cacert", cacert, "TLS: the server's CA")->check(CLI::ExistingFile);
  app.add_option("--cert", cert, "TLS: client certificate")->check(CLI::ExistingFile);
  app.add_option("--key", key, "TLS: the client certificate's key")->check(CLI::ExistingFile);
  auto* put = app.add_subcommand("put", "durable put throughput and latency");
  put->add_option("--clients", clients)->capture_default_str();
  put->add_option("--seconds", seconds)->capture_default_str();
  auto* range = app.add_subcommand("range", "single-key range throughput and latency");
  range->add_option("--clients", clients)->capture_default_str();
  range->add_option("--seconds", seconds)->capture_default_str();
  auto* watch = app.add_subcommand("watch", "watch fan-out throughput and latency");
  watch->add_option("--watchers", watchers)->capture_default_str();
  watch->add_option("--streams", streams)->capture_default_str();
  watch->add_option("--puts", puts)->capture_default_str();
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  if (cacert.empty() && !(cert.empty() && key.empty())) {
    std::fprintf(stderr, "store_bench: --cert and --key need --cacert (TLS)\n");
    return 2;
  }
  if (!cacert.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = Slurp(cacert);
    if (!cert.empty()) ssl.pem_cert_chain = Slurp(cert);
    if (!key.empty()) ssl.pem_private_key = Slurp(key);
    credentials = grpc::SslCredentials(ssl);
  }
  // As in the daemons: gRPC's mutexes are not checked for lock cycles on every acquisition.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (put->parsed()) return RunUnary(endpoint, "put", clients, seconds, value_bytes);
  if (range->parsed()) return RunUnary(endpoint, "range", clients, seconds, value_bytes);
  return RunWatch(endpoint, watchers, streams, puts, value_bytes);
}
