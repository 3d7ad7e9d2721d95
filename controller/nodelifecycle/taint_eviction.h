#pragma once

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "proto/api/core.pb.h"

namespace mkube::controller::nodelifecycle {

// Kubernetes' taint eviction controller: a pod on a node with a NoExecute taint it does not
// tolerate is deleted at once; one that tolerates every such taint, some only for
// tolerationSeconds, is deleted when the shortest of those has passed since the taint was
// seen (unless the taints go first); one that tolerates them for ever stays. Each deletion
// marks the pod DisruptionTarget and is a TaintManagerEviction event.
class TaintEvictionController final : public Controller {
 public:
  TaintEvictionController(client::ApiClient* client, client::Informer<api::Node>* nodes,
                          client::Informer<api::Pod>* pods, client::EventRecorder* events,
                          client::Clock* clock);
  ~TaintEvictionController() override { Stop(); }

  // Keys: "node/<name>" and "pod/<namespace>/<name>".
  absl::Status Sync(const std::string& key) override;

 private:
  struct Scheduled {
    std::string uid;
    absl::Time at;
  };
  absl::Status Process(const api::Pod& pod);
  absl::Status Evict(const api::Pod& pod);
  void Cancel(const api::Pod& pod);

  client::ApiClient* const client_;
  client::Informer<api::Node>* const nodes_;
  client::Informer<api::Pod>* const pods_;
  client::EventRecorder* const events_;
  absl::Mutex mu_;
  std::map<std::string, Scheduled> scheduled_ ABSL_GUARDED_BY(mu_);  // by pod key
};

}  // namespace mkube::controller::nodelifecycle
