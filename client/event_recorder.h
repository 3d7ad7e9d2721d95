#pragma once

#include <deque>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/event_correlator.h"
#include "proto/api/core.pb.h"

namespace mkube::client {

// Records Events about objects, as client-go's event recorder: posting happens on a thread of
// its own (a recorder never blocks its caller on the apiserver); an event that repeats one
// already posted (same object, type, reason and message) within ten minutes raises that
// event's count instead of adding another; and the EventCorrelator folds similar events and
// drops spam (25 events about one object at once, then one every five minutes).
//
// The queue toward the apiserver is bounded: past `max_queued` events, the oldest waiting one
// is dropped (and counted), so a slow apiserver costs events, not memory.
class EventRecorder {
 public:
  EventRecorder(ApiClient* client, std::string component, std::string host,
                size_t max_queued = 1000, Clock* clock = RealClock());
  ~EventRecorder();

  // type: "Normal" or "Warning".
  void Record(const google::protobuf::Message& obj, const std::string& type,
              const std::string& reason, const std::string& message);
  // Waits until everything recorded so far has been posted (or dropped).
  void Flush();
  size_t dropped() const;
  // Events the spam filter dropped.
  size_t filtered() const;

 private:
  struct Posted {
    std::string name, ns;
    int32_t count = 0;
    std::string first_timestamp;
    absl::Time last;
  };
  void Loop();
  void Post(EventCorrelator::Correlated c);

  ApiClient* client_;
  Clock* const clock_;
  const std::string component_, host_;
  const size_t max_queued_;
  mutable absl::Mutex mu_;
  EventCorrelator correlator_ ABSL_GUARDED_BY(mu_);
  std::deque<EventCorrelator::Correlated> queue_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  size_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  size_t filtered_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Only the posting thread uses it; the most recent 4096, as client-go's cache.
  LruMap<Posted> posted_{EventCorrelator::kCacheEntries};
  std::thread thread_;
};

}  // namespace mkube::client
