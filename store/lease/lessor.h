#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "store/lease/clock.h"
#include "store/mvcc/kv_store.h"

namespace mkube::store::lease {

// The shortest TTL granted, as etcd computes it for its default election timeout.
inline constexpr int64_t kMinTTLSeconds = 2;
inline constexpr int64_t kMaxTTLSeconds = 9000000000LL;

struct LeaseInfo {
  int64_t id = 0;
  int64_t granted_ttl = 0;
  int64_t remaining_ttl = 0;
  std::vector<std::string> keys;
};

// Leases: granted and revoked through the store's writer (so a grant is durable before it is
// acknowledged and a revoke deletes its keys in one revision), kept in memory with their
// deadlines, and revoked when a deadline passes. After a restart every lease gets its full TTL
// again, as in etcd.
class Lessor : public mvcc::LeaseView, public mvcc::CommitListener {
 public:
  using GrantDone = absl::AnyInvocable<void(absl::StatusOr<LeaseInfo>)>;
  using RevokeDone = absl::AnyInvocable<void(absl::Status)>;

  Lessor(mvcc::KvStore* store, const Clock* clock);
  ~Lessor() override;

  // Loads leases and their keys from the store. Call once, before any write.
  absl::Status Recover() ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the expiry thread, checking every `tick`.
  void Start(std::chrono::milliseconds tick = std::chrono::milliseconds(100));
  void Stop() ABSL_LOCKS_EXCLUDED(stop_mu_);

  void Grant(int64_t id, int64_t ttl, GrantDone done) ABSL_LOCKS_EXCLUDED(mu_);
  void Revoke(int64_t id, RevokeDone done) ABSL_LOCKS_EXCLUDED(mu_);
  // Renews the lease; returns its TTL, or 0 when there is no such lease.
  int64_t KeepAlive(int64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<LeaseInfo> TimeToLive(int64_t id, bool with_keys) const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<int64_t> Leases() const ABSL_LOCKS_EXCLUDED(mu_);
  // Revokes every lease past its deadline; the expiry thread calls it.
  void ExpireDue() ABSL_LOCKS_EXCLUDED(mu_);

  bool LeaseExists(int64_t id) const override ABSL_LOCKS_EXCLUDED(mu_);
  void OnCommit(int64_t revision, const mvcc::EventList& events) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Lease {
    int64_t ttl = 0;
    std::chrono::steady_clock::time_point deadline;
    std::set<std::string> keys;
    bool revoking = false;
  };

  mvcc::KvStore* store_;
  const Clock* clock_;
  mutable absl::Mutex mu_;
  std::map<int64_t, Lease> leases_ ABSL_GUARDED_BY(mu_);

  absl::Mutex stop_mu_;
  bool stopping_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread expiry_;
};

}  // namespace mkube::store::lease
