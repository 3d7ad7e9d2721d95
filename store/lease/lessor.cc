#include "store/lease/lessor.h"

#include <random>

#include "base/log.h"
#include "store/mvcc/codec.h"
#include "store/mvcc/validate.h"

namespace mkube::store::lease {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("lease");
  return logger;
}

constexpr char kMetaLease = 'l';

std::string LeaseKey(int64_t id) {
  std::string out(1, kMetaLease);
  mvcc::AppendBigEndian64(&out, static_cast<uint64_t>(id));
  return out;
}

}  // namespace

Lessor::Lessor(mvcc::KvStore* store, const Clock* clock) : store_(store), clock_(clock) {}

Lessor::~Lessor() { Stop(); }

absl::Status Lessor::Recover() {
  // Read from the database into a map of our own; only installing it takes the lock.
  const auto now = clock_->Now();
  std::map<int64_t, Lease> leases;
  auto st = store_->ScanMeta(std::string(1, kMetaLease), [&](std::string_view k, std::string_view v) {
    if (k.size() != 9 || v.size() != 8) return;
    Lease& l = leases[static_cast<int64_t>(mvcc::ReadBigEndian64(k.substr(1)))];
    l.ttl = static_cast<int64_t>(mvcc::ReadBigEndian64(v));
    l.deadline = now + std::chrono::seconds(l.ttl);
  });
  if (st.ok()) {
    st = store_->ScanMeta(std::string(1, mvcc::kMetaLeaseAttachment),
                          [&](std::string_view k, std::string_view) {
                            if (k.size() < 9) return;
                            auto id = static_cast<int64_t>(mvcc::ReadBigEndian64(k.substr(1)));
                            auto it = leases.find(id);
                            if (it != leases.end()) it->second.keys.emplace(k.substr(9));
                          });
  }
  // What was read before a failure stays, as it always did. (The map is empty: Recover runs
  // once, first.)
  absl::MutexLock lock(&mu_);
  leases_.merge(leases);
  return st;
}

void Lessor::Start(std::chrono::milliseconds tick) {
  expiry_ = std::thread([this, tick] {
    const absl::Duration every = absl::FromChrono(tick);
    for (;;) {
      {
        absl::MutexLock lock(&stop_mu_);
        if (stop_mu_.AwaitWithTimeout(absl::Condition(&stopping_), every)) return;
      }
      ExpireDue();
    }
  });
}

void Lessor::Stop() {
  {
    absl::MutexLock lock(&stop_mu_);
    stopping_ = true;
  }
  if (expiry_.joinable()) expiry_.join();
}

bool Lessor::LeaseExists(int64_t id) const {
  absl::MutexLock lock(&mu_);
  return leases_.contains(id);
}

void Lessor::OnCommit(int64_t, const mvcc::EventList& events) {
  absl::MutexLock lock(&mu_);
  for (const auto& ev : events) {
    const int64_t old_lease = ev.has_prev_kv() ? ev.prev_kv().lease() : 0;
    const int64_t new_lease = ev.type() == mvccpb::Event::PUT ? ev.kv().lease() : 0;
    if (old_lease == new_lease) continue;
    if (auto it = leases_.find(old_lease); it != leases_.end()) it->second.keys.erase(ev.kv().key());
    if (auto it = leases_.find(new_lease); it != leases_.end()) it->second.keys.insert(ev.kv().key());
  }
}

void Lessor::Grant(int64_t id, int64_t ttl, GrantDone done) {
  if (ttl > kMaxTTLSeconds) {
    done(absl::OutOfRangeError(mvcc::kErrLeaseTTLTooLarge));
    return;
  }
  ttl = std::max(ttl, kMinTTLSeconds);
  auto chosen = std::make_shared<int64_t>(id);
  store_->Exclusive(
      [this, chosen, ttl](mvcc::WriteGroup& group) -> absl::Status {
        {
          // Leases are added only by the writer (below, after this group), so the id stays
          // free once the lock is released.
          absl::MutexLock lock(&mu_);
          if (*chosen == 0) {
            static thread_local std::mt19937_64 rng(std::random_device{}());
            do {
              *chosen = static_cast<int64_t>(rng() >> 1);
            } while (*chosen == 0 || leases_.contains(*chosen));
          } else if (leases_.contains(*chosen)) {
            return absl::FailedPreconditionError(mvcc::kErrLeaseExists);
          }
        }
        std::string v;
        mvcc::AppendBigEndian64(&v, static_cast<uint64_t>(ttl));
        group.PutMeta(LeaseKey(*chosen), v);
        return absl::OkStatus();
      },
      [this, chosen, ttl, done = std::move(done)](absl::Status st) mutable {
        if (!st.ok()) {
          done(st);
          return;
        }
        const auto deadline = clock_->Now() + std::chrono::seconds(ttl);
        {
          absl::MutexLock lock(&mu_);
          Lease& l = leases_[*chosen];
          l.ttl = ttl;
          l.deadline = deadline;
        }
        done(LeaseInfo{*chosen, ttl, ttl, {}});
      });
}

void Lessor::Revoke(int64_t id, RevokeDone done) {
  store_->Exclusive(
      [this, id](mvcc::WriteGroup& group) -> absl::Status {
        std::set<std::string> keys;
        {
          absl::MutexLock lock(&mu_);
          auto it = leases_.find(id);
          if (it == leases_.end()) return absl::NotFoundError(mvcc::kErrLeaseNotFound);
          keys = it->second.keys;
        }
        for (const auto& key : keys) {
          auto kv = group.GetCurrent(key);
          if (!kv.ok()) return kv.status();
          if (kv->has_value() && (*kv)->lease() == id) {
            group.Delete(std::move(**kv));
          } else {
            group.DeleteMeta(mvcc::LeaseAttachmentKey(id, key));
          }
        }
        group.DeleteMeta(LeaseKey(id));
        return absl::OkStatus();
      },
      [this, id, done = std::move(done)](absl::Status st) mutable {
        {
          absl::MutexLock lock(&mu_);
          if (st.ok()) {
            leases_.erase(id);
          } else if (auto it = leases_.find(id); it != leases_.end()) {
            it->second.revoking = false;
          }
        }
        done(st);
      });
}

// The clock is read before the lock is taken: it is someone else's code.
int64_t Lessor::KeepAlive(int64_t id) {
  const auto now = clock_->Now();
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(id);
  if (it == leases_.end() || it->second.revoking) return 0;
  it->second.deadline = now + std::chrono::seconds(it->second.ttl);
  return it->second.ttl;
}

std::optional<LeaseInfo> Lessor::TimeToLive(int64_t id, bool with_keys) const {
  const auto now = clock_->Now();
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(id);
  if (it == leases_.end()) return std::nullopt;
  LeaseInfo info;
  info.id = id;
  info.granted_ttl = it->second.ttl;
  auto left = std::chrono::duration_cast<std::chrono::seconds>(it->second.deadline - now);
  info.remaining_ttl = std::max<int64_t>(0, left.count());
  if (with_keys) info.keys.assign(it->second.keys.begin(), it->second.keys.end());
  return info;
}

std::vector<int64_t> Lessor::Leases() const {
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> ids;
  for (const auto& [id, l] : leases_) ids.push_back(id);
  return ids;
}

void Lessor::ExpireDue() {
  std::vector<int64_t> due;
  {
    const auto now = clock_->Now();
    absl::MutexLock lock(&mu_);
    for (auto& [id, l] : leases_) {
      if (!l.revoking && l.deadline <= now) {
        l.revoking = true;
        due.push_back(id);
      }
    }
  }
  for (int64_t id : due) {
    Log().info("lease {:x} expired", id);
    Revoke(id, [id](absl::Status st) {
      if (!st.ok()) Log().warn("revoking expired lease {:x} failed: {}", id, st.ToString());
    });
  }
}

}  // namespace mkube::store::lease
