#include "apiserver/storage/compactor.h"

#include <string>

#include "absl/time/time.h"
#include "base/log.h"
#include "base/status.h"

namespace mkube::apiserver::storage {

namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("compactor");
  return logger;
}

}  // namespace

void Compactor::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Compactor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;  // wakes Loop
  }
  if (thread_.joinable()) thread_.join();
}

void Compactor::Loop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::FromChrono(interval_))) return;
    }
    if (auto st = Step(); !st.ok()) {
      Log().warn("compaction of the store failed: {}", st.ToString());
    }
  }
}

absl::Status Compactor::Step() {
  etcdserverpb::TxnRequest txn;
  auto* cmp = txn.add_compare();
  cmp->set_key(kCompactRevisionKey);
  cmp->set_target(etcdserverpb::Compare::VERSION);
  cmp->set_result(etcdserverpb::Compare::EQUAL);
  cmp->set_version(seen_version_);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(kCompactRevisionKey);
  put->set_value(std::to_string(last_revision_));
  txn.add_failure()->mutable_request_range()->set_key(kCompactRevisionKey);
  MKUBE_ASSIGN_OR_RETURN(auto resp, store_->Txn(txn));
  const int64_t target = last_revision_;
  last_revision_ = resp.header().revision();
  if (!resp.succeeded()) {
    // Another apiserver took this interval: follow its count.
    const auto& kvs = resp.responses(0).response_range().kvs();
    seen_version_ = kvs.empty() ? 0 : kvs[0].version();
    return absl::OkStatus();
  }
  ++seen_version_;
  if (target == 0) return absl::OkStatus();  // the first step only notes where the store is
  auto compacted = store_->Compact(target);
  if (!compacted.ok()) {
    // Compacted further already (by hand, say): nothing lost.
    if (absl::IsOutOfRange(compacted) &&
        compacted.message().find("compacted") != std::string::npos) {
      return absl::OkStatus();
    }
    return compacted;
  }
  Log().info("compacted the store to revision {}", target);
  return absl::OkStatus();
}

}  // namespace mkube::apiserver::storage
