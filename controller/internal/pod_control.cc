#include "controller/internal/pod_control.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "fmt/format.h"

namespace mkube::controller {

// The calls to the apiserver that one batch makes at once.
constexpr int kParallelCalls = 64;

namespace {

// The threads ParallelFor runs on, made once: starting 64 threads for every batch cost the
// controller-manager more than the calls they made.
class CallPool {
 public:
  static CallPool& Get() {
    static CallPool* pool = new CallPool(kParallelCalls);  // lives as long as the process
    return *pool;
  }

  void Post(std::function<void()> task) {
    absl::MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
  }

 private:
  explicit CallPool(int threads) {
    for (int i = 0; i < threads; ++i) std::thread([this] { Work(); }).detach();
  }

  void Work() {
    for (;;) {
      std::function<void()> task;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](std::deque<std::function<void()>>* q) { return !q->empty(); }, &tasks_));
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
};

// One ParallelFor: its items are taken in turn by the caller and the pool's threads. A
// thread that starts after every item is taken finds nothing to do, so the caller waits for
// the items, never for the threads.
struct ParallelJob {
  ParallelJob(int n, const std::function<void(int)>* fn) : n(n), fn(fn) {}
  void Run() {
    for (int i = next++; i < n; i = next++) {
      (*fn)(i);
      absl::MutexLock lock(&mu);
      ++done;
    }
  }
  bool Finished() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return done == n; }

  const int n;
  const std::function<void(int)>* const fn;  // called only while ParallelFor waits
  std::atomic<int> next{0};
  absl::Mutex mu;
  int done ABSL_GUARDED_BY(mu) = 0;
};

}  // namespace

void ParallelFor(int n, int threads, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  threads = std::min({n, threads, kParallelCalls});
  if (threads <= 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<ParallelJob>(n, &fn);
  for (int t = 1; t < threads; ++t) CallPool::Get().Post([job] { job->Run(); });
  job->Run();
  absl::MutexLock lock(&job->mu);
  job->mu.Await(absl::Condition(job.get(), &ParallelJob::Finished));
}

int SlowStartBatch(int n, const AsyncItem& fn, absl::Status* first_error) {
  int done = 0, successes = 0;
  for (int batch = std::min(n, 1); done < n; batch = std::min(2 * batch, n - done)) {
    struct Tally {
      absl::Mutex mu;
      int left ABSL_GUARDED_BY(mu) = 0;
      int running ABSL_GUARDED_BY(mu) = 0;  // started, not yet answered
      int ok ABSL_GUARDED_BY(mu) = 0;
      absl::Status error ABSL_GUARDED_BY(mu);
    };
    auto tally = std::make_shared<Tally>();
    {
      absl::MutexLock lock(&tally->mu);
      tally->left = batch;
    }
    for (int i = 0; i < batch; ++i) {
      {
        // At most kParallelCalls of a batch wait for the apiserver at once.
        absl::MutexLock lock(&tally->mu);
        tally->mu.Await(absl::Condition(
            +[](int* running) { return *running < kParallelCalls; }, &tally->running));
        ++tally->running;
      }
      fn(done + i, [tally](absl::Status st) {
        absl::MutexLock lock(&tally->mu);
        --tally->running;
        if (st.ok()) {
          ++tally->ok;
        } else if (tally->error.ok()) {
          tally->error = std::move(st);
        }
        --tally->left;
      });
    }
    absl::MutexLock lock(&tally->mu);
    tally->mu.Await(absl::Condition(
        +[](int* left) { return *left == 0; }, &tally->left));
    successes += tally->ok;
    done += batch;
    if (!tally->error.ok()) {
      if (first_error) *first_error = tally->error;
      break;
    }
  }
  return successes;
}

void PodControl::Create(const google::protobuf::Message& owner, const api::Pod& pod,
                        std::function<void(absl::Status)> done) {
  apiserver::CreateRequest req;
  req.set_resource("pods");
  req.set_namespace_(pod.metadata().namespace_());
  req.set_object(pod.SerializeAsString());
  client_->CreateRawAsync(req, [this, &owner, done = std::move(done)](auto created) {
    api::Pod made;
    if (created.ok() && !made.ParseFromString(*created)) {
      created = absl::DataLossError("cannot decode the reply");
    }
    if (!created.ok()) {
      events_->Record(owner, "Warning", "FailedCreate",
                      fmt::format("Error creating: {}", std::string(created.status().message())));
      return done(created.status());
    }
    events_->Record(owner, "Normal", "SuccessfulCreate",
                    fmt::format("Created pod: {}", made.metadata().name()));
    done(absl::OkStatus());
  });
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
