#include "controller/internal/expectations.h"

namespace mkube::controller {

bool Expectations::Satisfied(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = records_.find(key);
  if (it == records_.end()) return true;
  const Record& r = it->second;
  return (r.adds <= 0 && r.deletes.empty()) || clock_->Now() - r.since > kTimeout;
}

void Expectations::ExpectCreations(const std::string& key, int n) {
  absl::MutexLock lock(&mu_);
  records_[key] = Record{.adds = n, .since = clock_->Now()};
}

void Expectations::ExpectDeletions(const std::string& key, const std::set<std::string>& objects) {
  absl::MutexLock lock(&mu_);
  records_[key] = Record{.deletes = objects, .since = clock_->Now()};
}

void Expectations::CreationObserved(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = records_.find(key);
  if (it != records_.end() && it->second.adds > 0) --it->second.adds;
}

void Expectations::DeletionObserved(const std::string& key, const std::string& object) {
  absl::MutexLock lock(&mu_);
  auto it = records_.find(key);
  if (it != records_.end()) it->second.deletes.erase(object);
}

void Expectations::Delete(const std::string& key) {
  absl::MutexLock lock(&mu_);
  records_.erase(key);
}

}  // namespace mkube::controller
