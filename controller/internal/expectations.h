#pragma once

#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/clock.h"

namespace mkube::controller {

// What a controller is waiting to see in its informers after its own writes, as client-go's
// UIDTrackingControllerExpectations: a controller that created 10 pods must not create them
// again just because the watch has delivered only 3 so far. A key whose expectations are not
// yet met is not acted on (its status is still written); expectations older than five
// minutes count as met, so a lost event cannot stall a controller forever.
class Expectations {
 public:
  static constexpr absl::Duration kTimeout = absl::Minutes(5);

  explicit Expectations(client::Clock* clock) : clock_(clock) {}

  // True when nothing is awaited for `key` (or what is awaited has waited too long).
  bool Satisfied(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);
  // Awaits `n` creations (replacing whatever was awaited).
  void ExpectCreations(const std::string& key, int n) ABSL_LOCKS_EXCLUDED(mu_);
  // Awaits the deletion of each of these objects (by key: each lowers the count once).
  void ExpectDeletions(const std::string& key, const std::set<std::string>& objects)
      ABSL_LOCKS_EXCLUDED(mu_);
  void CreationObserved(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);
  void DeletionObserved(const std::string& key, const std::string& object)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets `key` (its owner is gone).
  void Delete(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Record {
    int adds = 0;
    std::set<std::string> deletes;
    absl::Time since;
  };

  client::Clock* const clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, Record> records_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mkube::controller
