#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "apiserver/storage/storage.h"

namespace mkube::apiserver::storage {

// The key apiservers of one store share to take turns at compacting it, as Kubernetes does.
inline constexpr char kCompactRevisionKey[] = "compact_rev_key";

// Compacts the store's history periodically, keeping about one interval of it: each step
// compacts to the revision the previous step saw. Several apiservers on one store take turns
// through a compare-and-swap on the version of kCompactRevisionKey: in each interval the first
// to bump it compacts, the others follow its count.
class Compactor {
 public:
  Compactor(Storage* store, std::chrono::milliseconds interval)
      : store_(store), interval_(interval) {}
  ~Compactor() { Stop(); }
  Compactor(const Compactor&) = delete;
  Compactor& operator=(const Compactor&) = delete;

  void Start();
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // One step; errors leave the state for the next step to retry.
  absl::Status Step();

  Storage* const store_;
  const std::chrono::milliseconds interval_;
  // Only the compactor's thread (Step) touches these.
  int64_t seen_version_ = 0;   // kCompactRevisionKey's version after the last step
  int64_t last_revision_ = 0;  // the store's revision at the last step
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace mkube::apiserver::storage
