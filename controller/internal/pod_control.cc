#include "controller/internal/pod_control.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "fmt/format.h"

namespace mkube::controller {

// The calls to the apiserver that one batch makes at once.
constexpr int kParallelCalls = 64;

void ParallelFor(int n, int threads, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  threads = std::min(n, threads);
  if (threads <= 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& t : pool) t.join();
}

int SlowStartBatch(int n, const std::function<absl::Status(int)>& fn, absl::Status* first_error) {
  int done = 0, successes = 0;
  for (int batch = std::min(n, 1); done < n; batch = std::min(2 * batch, n - done)) {
    std::atomic<int> ok{0};
    std::mutex mu;
    absl::Status error;
    const int base = done;
    ParallelFor(batch, kParallelCalls, [&](int i) {
      absl::Status st = fn(base + i);
      if (st.ok()) {
        ++ok;
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      if (error.ok()) error = st;
    });
    successes += ok.load();
    done += batch;
    if (!error.ok()) {
      if (first_error) *first_error = error;
      break;
    }
  }
  return successes;
}

absl::Status PodControl::Create(const google::protobuf::Message& owner, const api::Pod& pod) {
  auto created = client_->Create<api::Pod>("pods", pod.metadata().namespace_(), pod);
  if (!created.ok()) {
    events_->Record(owner, "Warning", "FailedCreate",
                    fmt::format("Error creating: {}", std::string(created.status().message())));
    return created.status();
  }
  events_->Record(owner, "Normal", "SuccessfulCreate",
                  fmt::format("Created pod: {}", created->metadata().name()));
  return absl::OkStatus();
}

absl::Status PodControl::Delete(const google::protobuf::Message& owner, const api::Pod& pod) {
  apiserver::DeleteRequest req;
  req.set_resource("pods");
  req.set_namespace_(pod.metadata().namespace_());
  req.set_name(pod.metadata().name());
  req.mutable_preconditions()->set_uid(pod.metadata().uid());
  auto r = client_->Delete(req);
  if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) {
    events_->Record(owner, "Warning", "FailedDelete",
                    fmt::format("Error deleting: {}", std::string(r.status().message())));
    return r.status();
  }
  if (r.ok()) {
    events_->Record(owner, "Normal", "SuccessfulDelete",
                    fmt::format("Deleted pod: {}", pod.metadata().name()));
  }
  return absl::OkStatus();
}

}  // namespace mkube::controller
