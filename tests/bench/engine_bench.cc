// engine_bench: the store engine alone (no gRPC). Several submitter threads keep N puts in
// flight through KvStore::Txn; prints throughput and process CPU per put, separating the
// engine's cost from the RPC layer's. Only puts that succeeded count; a failed one is an
// error (errors=, exit status 1).
//   engine_bench [in_flight=256] [puts=100000] [value_bytes=256]
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <semaphore>
#include <thread>
#include <vector>

#include "store/mvcc/kv_store.h"

namespace {

class NoLeases : public mkube::store::mvcc::LeaseView {
 public:
  bool LeaseExists(int64_t) const override { return false; }
};

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const int in_flight = argc > 1 ? std::atoi(argv[1]) : 256;
  const int total = argc > 2 ? std::atoi(argv[2]) : 100000;
  const int value_bytes = argc > 3 ? std::atoi(argv[3]) : 256;
  const std::string dir = std::filesystem::temp_directory_path() / "mkube-engine-bench";
  std::filesystem::remove_all(dir);
  mkube::store::mvcc::StoreOptions options;
  options.data_dir = dir;
  auto store = mkube::store::mvcc::KvStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "engine_bench: %s: %s\n", dir.c_str(), store.status().ToString().c_str());
    return 1;
  }
  NoLeases leases;
  (*store)->SetLeaseView(&leases);

  constexpr int kSubmitters = 4;
  std::counting_semaphore<> slots(in_flight);
  std::atomic<int> next{0}, done{0}, failed{0};
  const std::string value(static_cast<size_t>(value_bytes), 'x');
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> submitters;
  for (int s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&] {
      for (int i = next++; i < total; i = next++) {
        slots.acquire();
        etcdserverpb::TxnRequest t;
        auto* p = t.add_success()->mutable_request_put();
        p->set_key("bench/" + std::to_string(i % 10000));
        p->set_value(value);
        (*store)->Txn(std::move(t), [&](absl::StatusOr<etcdserverpb::TxnResponse> r) {
          if (!r.ok() && failed.fetch_add(1) == 0) {
            std::fprintf(stderr, "engine_bench: put failed: %s\n", r.status().ToString().c_str());
          }
          ++done;
          slots.release();
        });
      }
    });
  }
  for (auto& t : submitters) t.join();
  while (done < total) std::this_thread::sleep_for(std::chrono::microseconds(100));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  const int ok = total - failed.load();
  std::printf("engine in_flight=%d puts=%d errors=%d throughput=%.0f cpu_us_per_put=%.1f\n",
              in_flight, total, failed.load(), ok / secs, ok > 0 ? cpu * 1e6 / ok : 0.0);
  store->reset();
  std::filesystem::remove_all(dir);
  return failed.load() == 0 ? 0 : 1;
}
