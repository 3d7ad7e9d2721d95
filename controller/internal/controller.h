#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/clock.h"
#include "client/workqueue.h"
#include "google/protobuf/message.h"

namespace mkube::controller {

// What every controller of the controller-manager shares, as client-go controllers do: keys
// ("namespace/name") in a work queue, a few workers that each take one key at a time (a key
// is never synced by two at once), and a sync that re-reads the object from the informers'
// caches. A failed sync comes back after the queue's per-key back-off (5 ms doubling to
// 1000 s); a successful one resets it.
class Controller {
 public:
  Controller(std::string name, client::Clock* clock);
  virtual ~Controller();

  // Brings the object named by `key` to what its spec asks for; an error retries it later.
  virtual absl::Status Sync(const std::string& key) = 0;

  // Starts `workers` threads (once the informers have synced).
  void Start(int workers);
  // Stops the workers after their current key. Derived classes call it in their destructor,
  // before their own members go.
  void Stop();

  const std::string& name() const { return name_; }
  client::WorkQueue& queue() { return queue_; }

 protected:
  void Enqueue(const google::protobuf::Message& obj);
  void EnqueueAfter(const google::protobuf::Message& obj, absl::Duration delay);

  client::Clock* const clock_;

 private:
  void Work();

  const std::string name_;
  client::WorkQueue queue_;
  std::vector<std::thread> workers_;
};

}  // namespace mkube::controller
