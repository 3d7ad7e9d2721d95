#pragma once

#include "client/client.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "proto/api/core.pb.h"

namespace mkube::controller::garbage {

// Kubernetes' pod garbage collector for pods whose node is gone: when a Node is deleted, the
// pods bound to it are deleted at once (grace 0: no agent is left to stop them gracefully);
// every `period` the pods bound to a node that does not exist (asked of the apiserver, not
// only of the cache) are too.
class PodGC final : public Controller {
 public:
  PodGC(client::ApiClient* client, client::Informer<api::Node>* nodes,
        client::Informer<api::Pod>* pods, client::Clock* clock,
        absl::Duration period = absl::Seconds(20));
  ~PodGC() override { Stop(); }

  // Keys: "node/<name>" (a node was deleted) and "sweep" (the periodic pass).
  absl::Status Sync(const std::string& key) override;

 private:
  absl::StatusOr<bool> NodeExists(const std::string& name) const;
  absl::Status DeletePodsOf(const std::string& node);

  client::ApiClient* const client_;
  client::Informer<api::Node>* const nodes_;
  client::Informer<api::Pod>* const pods_;
  const absl::Duration period_;
};

}  // namespace mkube::controller::garbage
