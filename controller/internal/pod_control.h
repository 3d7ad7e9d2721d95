#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "client/client.h"
#include "client/event_recorder.h"
#include "proto/api/core.pb.h"

namespace mkube::controller {

// Runs fn(0) ... fn(n-1) on up to `threads` threads at once and waits for them all.
void ParallelFor(int n, int threads, const std::function<void(int)>& fn);

// Kubernetes' slow start: starts `fn` for `n` items in batches of 1, 2, 4, ... (each batch at
// once, waiting for its end before the next), stopping after the first batch with a failure,
// so that a controller whose every creation fails (a quota, a bad template) makes one failed
// call, not thousands. fn(i, done) starts item i and calls done once with how it went (on any
// thread). Returns how many items succeeded; `first_error` gets the first failure.
using AsyncItem = std::function<void(int, std::function<void(absl::Status)>)>;
int SlowStartBatch(int n, const AsyncItem& fn, absl::Status* first_error);

// Creates and deletes pods for a controller, and records the events kube-controller-manager
// records on the controller for each (SuccessfulCreate, FailedCreate, SuccessfulDelete,
// FailedDelete).
class PodControl {
 public:
  PodControl(client::ApiClient* client, client::EventRecorder* events)
      : client_(client), events_(events) {}

  // `owner` is the controller the events are about; it must outlive `done`'s call, which
  // comes once the apiserver has answered (on any thread).
  void Create(const google::protobuf::Message& owner, const api::Pod& pod,
              std::function<void(absl::Status)> done);
  // A NotFound is success: the pod is gone either way.
  absl::Status Delete(const google::protobuf::Message& owner, const api::Pod& pod);

 private:
  client::ApiClient* client_;
  client::EventRecorder* events_;
};

}  // namespace mkube::controller
