#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "api/kinds.h"
#include "client/client.h"
#include "client/clock.h"

namespace mkube::client::testing {

// One call made to the fake, as client-go's fake clientset records actions.
struct Action {
  std::string verb;  // get, list, watch, create, update, patch, delete
  std::string resource, subresource, ns, name;
  std::string body;  // the object sent (create, update) or the merge patch
};

// An in-memory apiserver for unit tests, the analogue of client-go's fake clientset: objects
// by resource, namespace and name, each write a new resourceVersion, optimistic concurrency
// (an update naming an old version conflicts), merge patches, the pods/status, pods/binding
// and pods/eviction subresources, graceful deletion of bound pods, label and field selectors,
// and watches that replay from a resourceVersion with ADDED / MODIFIED / DELETED. Objects are
// defaulted and validated as the apiserver does. A test can make calls fail (reactors), end
// open watches, and make old versions "too old" (Compact), so that informers relist.
class FakeClient final : public ApiClient {
 public:
  explicit FakeClient(Clock* clock = RealClock());
  ~FakeClient() override;

  absl::StatusOr<std::string> GetRaw(const apiserver::GetRequest& req) override;
  absl::StatusOr<std::string> CreateRaw(const apiserver::CreateRequest& req) override;
  absl::StatusOr<std::string> UpdateRaw(const apiserver::UpdateRequest& req) override;
  absl::StatusOr<std::string> PatchRaw(const apiserver::PatchRequest& req) override;
  absl::StatusOr<std::string> Delete(const apiserver::DeleteRequest& req) override;
  absl::StatusOr<apiserver::ListReply> List(const apiserver::ListRequest& req) override;
  WatchStreamPtr Watch(const apiserver::WatchRequest& req) override;

  // Runs before every call that matches verb and resource ("*" matches any); a status makes
  // the call fail with it, nullopt lets it through. The newest reactor runs first.
  using Reactor = std::function<std::optional<absl::Status>(const Action&)>;
  void PrependReactor(const std::string& verb, const std::string& resource, Reactor reactor);
  // The next `times` calls of verb on resource fail with `status`.
  void FailNext(const std::string& verb, const std::string& resource, absl::Status status,
                int times = 1);

  std::vector<Action> Actions() const;
  // The recorded calls of one verb (and resource, unless empty).
  std::vector<Action> Actions(const std::string& verb, const std::string& resource = "") const;
  void ClearActions();
  // Waits (real time) until at least n calls of `verb` have been made.
  bool WaitForActions(const std::string& verb, size_t n,
                      absl::Duration timeout = absl::Seconds(10)) const;

  // Ends every open watch with `status` (UNAVAILABLE: a broken connection; OUT_OF_RANGE: the
  // version is too old and the watcher must relist).
  void EndWatches(const absl::Status& status);
  // Forgets the history up to now: watches from an older resourceVersion fail with
  // OUT_OF_RANGE, as after the apiserver's window moved on.
  void Compact();
  int open_watches() const;
  // Waits (real time) until at least n watches are open.
  bool WaitForWatches(int n, absl::Duration timeout = absl::Seconds(10)) const;
  int64_t resource_version() const;

 private:
  struct Stored {
    std::shared_ptr<const google::protobuf::Message> object;  // resourceVersion filled in
    std::string bytes;
  };
  struct Change {
    int64_t revision;
    std::string resource;
    std::string type;  // ADDED, MODIFIED, DELETED
    Stored now;
    std::optional<Stored> before;  // for MODIFIED
  };
  class FakeWatch;
  class FakeWatchStream;
  struct ReactorEntry {
    std::string verb, resource;
    Reactor reactor;
  };

  // Records the call and asks the reactors; a status when the call must fail.
  absl::Status React(Action action);
  absl::StatusOr<std::string> Write(const api::KindInfo& kind, const std::string& ns,
                                    std::unique_ptr<google::protobuf::Message> obj,
                                    const Stored* current) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::string> Bind(const apiserver::CreateRequest& req)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::string> DeleteLocked(const apiserver::DeleteRequest& req)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::string> UpdateLocked(const apiserver::UpdateRequest& req)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the object stored at `key` (it must be there) and records its deletion, as
  // `last_state` when given (an update that removed its last finalizer).
  absl::StatusOr<std::string> Remove(const api::KindInfo& kind, const std::string& key,
                                     const google::protobuf::Message* last_state = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Record(Change change) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Deliver(FakeWatch& watch, const Change& change);

  Clock* const clock_;
  mutable absl::Mutex mu_;
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t compacted_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Stored> objects_ ABSL_GUARDED_BY(mu_);  // by resource/ns/name
  std::vector<Change> history_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<FakeWatch>> watches_ ABSL_GUARDED_BY(mu_);
  std::vector<ReactorEntry> reactors_ ABSL_GUARDED_BY(mu_);
  std::vector<Action> actions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mkube::client::testing
